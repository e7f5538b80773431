// The owner's actions and view as host operations, on real stores with an injected clock: a waiting
// row tried again at once, a quarantined item dismissed, and the view reads without moving any
// delivery state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flushOutbox } from '../../src/host/outbox.ts';
import { dismissQuarantined, retryRowNow } from '../../src/host/owner-actions.ts';
import { openMessage, ownerView, searchAll } from '../../src/host/owner-view.ts';
import { HostError } from '../../src/host/core/host-error.ts';
import { alertLocal } from '../../src/host/core/alerts.ts';
import { sendMail } from '../../src/host/send.ts';
import { LanTransport } from '../../src/host/transport/lan/client.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test('retry now makes a backed-off queued row due at once, and only a queued one', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  const peer = a.store.peers.get('beta') ?? assert.fail('no peer');
  a.store.peers.pin({ ...peer, addr: 'http://127.0.0.1:1' }, clock.now);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'plans', body: 'x' });
  await flushOutbox(a, new LanTransport(a));
  const row = a.store.outbox.forMessage(id)[0] ?? assert.fail('no row');
  assert.equal(row.attempts, 1);
  assert.ok(row.next_at > clock.now, 'backed off');
  assert.deepEqual(a.store.outbox.due(clock.now, 10), []);
  const view = ownerView(a, null);
  assert.deepEqual(
    view.waiting.map((w) => [w.row, w.attempts, w.peer_host]),
    [[row.id, 1, 'beta']],
  );

  retryRowNow(a, row.id);
  assert.deepEqual(
    a.store.outbox.due(clock.now, 10).map((r) => [r.id, r.attempts]),
    [[row.id, 1]],
    'due now, attempts kept',
  );
  // a row that ended is no longer the owner's to retry
  assert.ok(a.store.outbox.end(row.id, 'reject', clock.now, { error: 'test' }));
  assert.throws(
    () => retryRowNow(a, row.id),
    (err: unknown) => err instanceof HostError && err.kind === 'not-found',
  );
  assert.throws(
    () => retryRowNow(a, Number.NaN),
    (err: unknown) => err instanceof HostError && err.kind === 'invalid',
  );
});

test("dismiss takes one quarantined item off the owner's list (kept in the store, as the CLI does), and says so when it was dismissed already", async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const item = {
    relay_url: 'http://relay.test',
    epoch: 'e1',
    seq: 7,
    kind: 'envelope',
    item_id: 'x1',
    sender_pubkey: b.keys.hostKey.publicKey,
    reason: 'bad signature',
    wire_b64: 'e30=',
    at: clock.now,
  };
  a.store.relay.quarantine(item);
  a.store.relay.quarantine({ ...item, seq: 8, item_id: 'x2' });
  assert.deepEqual(
    ownerView(a, null).quarantine.map((q) => [q.seq, q.reason]),
    [
      [7, 'bad signature'],
      [8, 'bad signature'],
    ],
  );
  dismissQuarantined(a, { relay_url: item.relay_url, epoch: 'e1', seq: 7 });
  assert.deepEqual(
    ownerView(a, null).quarantine.map((q) => q.seq),
    [8],
  );
  assert.deepEqual(
    a.store.relay.quarantined().map((q) => [q.seq, q.dismissed_at]),
    [
      [7, clock.now],
      [8, null],
    ],
    'nothing is deleted',
  );
  assert.equal(dismissQuarantined(a, { relay_url: item.relay_url, epoch: 'e1', seq: 7 }), false, 'dismissed already: no failure, nothing changes');
  assert.equal(a.store.relay.quarantined()[0]?.dismissed_at, clock.now);
  assert.throws(
    () => dismissQuarantined(a, { relay_url: item.relay_url, epoch: 'e2', seq: 7 }),
    (err: unknown) => err instanceof HostError && err.kind === 'not-found',
  );
});

test("the owner's view, an opened message and a search change no delivery state", async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'al', to: ['ann'], subject: 'lunch plans', body: 'noon at the usual place' });
  const before = a.store.mail.deliveriesOf(id);
  const view = ownerView(a, 'ann');
  assert.deepEqual(
    view.threads.map((t) => t.messages.map((m) => [m.id, m.trust, m.recipients.map((r) => [r.recipient, r.state])])),
    [[[id, 'local', [['ann@alpha', 'delivered']]]]],
  );
  assert.deepEqual(
    view.mailboxes.map((m) => [m.name, m.unread]),
    [
      ['owner', 0],
      ['al', 0],
      ['ann', 1],
    ],
  );
  assert.equal(openMessage(a, id)?.body, 'noon at the usual place');
  assert.deepEqual(
    searchAll(a, 'usual', null).map((m) => m.id),
    [id],
    'found once though two mailboxes see it',
  );
  assert.deepEqual(a.store.mail.deliveriesOf(id), before, 'looking is a peek');
  alertLocal(a, 'ann', 'Rejected by beta: lunch', 'beta refused it', id);
  // a peer's bounce (from its own mbx) is one too; mail of an agent whose name only starts so is not
  const received = {
    direction: 'in' as const,
    sender_host: 'beta',
    to_json: '["ann@alpha"]',
    reply_to: null,
    kind: 'alert',
    body: 'b',
    wire: null,
    meta_json: null,
    created_at: clock.now,
    needs_reply: 0,
    refs_json: '[]',
  };
  a.store.mail.insertMessage({
    ...received,
    id: '01M90000000000000000000001',
    from_addr: 'mbx@beta',
    thread: 't1',
    subject: 'Bounced by beta',
    ts: '2026-12-02T12:00:01.000Z',
  });
  a.store.mail.insertMessage({
    ...received,
    id: '01M90000000000000000000002',
    from_addr: 'mbxer@beta',
    thread: 't2',
    subject: 'not an alert',
    ts: '2026-12-02T12:00:02.000Z',
  });
  assert.deepEqual(
    ownerView(a, null).alerts.map((m) => [m.from, m.subject]),
    [
      ['mbx@beta', 'Bounced by beta'],
      ['mbx@alpha', 'Rejected by beta: lunch'],
    ],
  );
});
