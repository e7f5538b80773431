import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EnvelopeV3 } from '../../src/protocol/records/envelope.ts';
import { sendMail } from '../../src/host/send.ts';
import { flushOutbox } from '../../src/host/outbox.ts';
import { LanTransport } from '../../src/host/transport/lan/client.ts';
import { ackMessage, listInbox, readMessage } from '../../src/host/mailbox.ts';
import { messageStatus } from '../../src/host/core/receipts.ts';
import { messageView, visibleMessage } from '../../src/host/agent-mail.ts';
import { pendingWake } from '../../src/host/wake/wake.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test('mail goes sealed over the LAN, receipts come back, the sender sees acked', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const sent = sendMail(a, { from: 'ann', to: ['bob@beta', 'al'], subject: 'hello', body: 'secret plan' });
  assert.deepEqual(sent.remoteHosts, ['beta']);
  assert.deepEqual(sent.localAgents, ['al']);
  const row = a.store.outbox.forMessage(sent.id)[0];
  assert.ok(row !== undefined);
  assert.ok(!row.wire.includes('secret plan'), 'the wire never holds the plaintext body');

  assert.equal(await flushOutbox(a, new LanTransport(a)), 1);
  assert.equal(a.store.outbox.forMessage(sent.id)[0]?.state, 'handed-over');
  const inbox = listInbox(b, 'bob');
  assert.equal(inbox.length, 1);
  assert.equal(inbox[0]?.body, 'secret plan');
  assert.equal(inbox[0]?.from_addr, 'ann@alpha');
  readMessage(b, sent.id, 'bob');
  assert.throws(() => ackMessage(b, sent.id, 'bob', 'n'.repeat(501)), /longer than 500/);
  assert.equal(ackMessage(b, sent.id, 'bob', 'done'), true);
  assert.equal(ackMessage(b, sent.id, 'bob', 'again'), false, 'acked stays acked');
  assert.equal(readMessage(b, sent.id, 'bob').state, 'acked', 'reading again does not move it back');
  assert.equal(inbox[0]?.state, 'notified', 'listing notified it');

  await flushOutbox(b, new LanTransport(b));
  const status = messageStatus(a, sent.id);
  assert.deepEqual(
    status?.recipients.map((r) => [r.recipient, r.state]),
    [
      ['al@alpha', 'delivered'],
      ['bob@beta', 'acked'],
    ],
  );
  assert.equal(status?.recipients[1]?.note, 'done');
});

test('a sent envelope carries the meta derived from its plain body; both hosts keep it for read', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const body = '@bob@beta /claim T204 #ops (@al) — /claim again, @Bob@beta again';
  const derived = { mentions: ['bob@beta', 'al'], directives: ['claim'], tags: ['ops'], task_refs: ['T204'] };
  const sent = sendMail(a, { from: 'ann', to: ['bob@beta', 'al'], subject: 'meta', body });
  const wire = a.store.outbox.forMessage(sent.id)[0]?.wire ?? '';
  assert.ok(!wire.includes('/claim T204'), 'the body is sealed; meta travels beside it');
  assert.deepEqual((JSON.parse(wire) as EnvelopeV3).meta, derived);
  assert.deepEqual(JSON.parse(a.store.mail.message(sent.id)?.meta_json ?? 'null'), derived, 'kept on send');
  await flushOutbox(a, new LanTransport(a));
  assert.deepEqual(JSON.parse(b.store.mail.message(sent.id)?.meta_json ?? 'null'), derived, 'kept on receive');
});

test('needs_reply and refs read the same for a local recipient, a remote one and the sender', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const asked = sendMail(a, { from: 'ann', to: ['bob@beta', 'al'], subject: 'asked', body: 'b', needsReply: true, refs: ['https://x.example/pr/7', 'T12'] });
  const request = sendMail(a, { from: 'ann', to: ['bob@beta', 'al'], subject: 'fyi', body: 'b', kind: 'request', needsReply: false });
  const plain = sendMail(a, { from: 'ann', to: ['bob@beta', 'al'], subject: 'req', body: 'b', kind: 'request' });
  await flushOutbox(a, new LanTransport(a));
  const seen = (node: typeof a, agent: string, id: string): [boolean, string[]] => {
    const m = messageView(node, visibleMessage(node, agent, id));
    return [m.needs_reply, m.refs];
  };
  for (const [id, expected] of [
    [asked.id, [true, ['https://x.example/pr/7', 'T12']]],
    [request.id, [false, []]],
    [plain.id, [true, []]],
  ] as const) {
    assert.deepEqual(seen(b, 'bob', id), expected, 'remote recipient');
    assert.deepEqual(seen(a, 'al', id), expected, 'local recipient');
    assert.deepEqual(seen(a, 'ann', id), expected, 'sender');
  }
  // a wake (hook, channel, exec) tells the local agent the same
  assert.deepEqual(
    pendingWake(a, 'al', 'hook').woken.map((w) => w.notice.needs_reply),
    [true, false, true],
  );
});

test('status shows queued, then handed-over before any receipt', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const sent = sendMail(a, { from: 'ann', to: ['*'], subject: 's', body: 'b' });
  assert.deepEqual(
    messageStatus(a, sent.id)?.recipients.map((r) => [r.recipient, r.state]),
    [
      ['al@alpha', 'delivered'],
      ['*@beta', 'queued'],
    ],
  );
  await flushOutbox(a, new LanTransport(a));
  assert.deepEqual(
    messageStatus(a, sent.id)?.recipients.map((r) => [r.recipient, r.state]),
    [
      ['al@alpha', 'delivered'],
      ['*@beta', 'handed-over'],
    ],
  );
  assert.deepEqual(listInbox(b, 'bob').length + listInbox(b, 'bea').length, 2, 'broadcast reaches every agent on beta');
});
