// The wake module: per agent and path what is new, committed once; outcomes per message in status;
// the loop guard stops wakes at its budget (mail still delivered, the owner alerted once) and an
// owner's message or `guard resume` lifts it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signReceipt } from '../../src/protocol/records/receipt.ts';
import { listInbox } from '../../src/host/mailbox.ts';
import { acceptReceipt, messageStatus } from '../../src/host/core/receipts.ts';
import { receive } from '../../src/host/core/receive.ts';
import { sendMail } from '../../src/host/send.ts';
import { commitWake, pendingWake, takeWake } from '../../src/host/wake/wake.ts';
import { heldThreads, resumeThread, setGuardSettings } from '../../src/host/wake/loop-guard.ts';
import { makeHost, pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test('each wake path tells an agent of new unread mail once; the outcome and notified state follow the commit', () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann', 'al']);
  const first = sendMail(a, { from: 'al', to: ['ann'], subject: 'one', body: 'secret body', kind: 'request' }).id;
  const peeked = pendingWake(a, 'ann', 'exec');
  assert.deepEqual(
    peeked.woken.map((w) => w.notice.id),
    [first],
  );
  assert.equal(peeked.woken[0]?.notice.needs_reply, true);
  assert.equal(JSON.stringify(peeked).includes('secret body') && 'body' in (peeked.woken[0]?.notice ?? {}), false, 'a notice never carries the body');
  // nothing is marked before the commit: the same mail is pending again
  assert.equal(pendingWake(a, 'ann', 'exec').woken.length, 1);
  assert.equal(messageStatus(a, first)?.recipients[0]?.wake, 'none');
  commitWake(a, peeked);
  assert.equal(pendingWake(a, 'ann', 'exec').woken.length, 0, 'committed: not new for this path any more');
  assert.equal(takeWake(a, 'ann', 'hook').woken.length, 1, 'another path has its own cursor');
  const status = messageStatus(a, first)?.recipients[0];
  assert.equal(status?.state, 'notified');
  assert.equal(status?.wake, 'hook, exec');
  // mail the agent has read is not woken for
  const second = sendMail(a, { from: 'al', to: ['ann'], subject: 'two', body: 'x' }).id;
  listInbox(a, 'ann');
  a.store.mail.advanceDelivery(second, 'ann', 'read', null, clock.now);
  assert.equal(
    takeWake(a, 'ann', 'channel')
      .woken.map((w) => w.notice.id)
      .join(),
    first,
    'unread only',
  );
  assert.equal(takeWake(a, 'ann', 'channel').woken.length, 0);
  // a new session is told of every unread message, whatever the cursor says
  assert.equal(takeWake(a, 'ann', 'hook', 'unread').woken.length, 1);
});

test('a remote recipient host says in its notified receipt how its agent was woken; later receipts keep it', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const via = { transport: 'test', peerPubkey: b.keys.hostKey.publicKey };
  const rec = (state: 'notified' | 'read', seq: number, note?: string) =>
    signReceipt(
      {
        v: 1,
        type: 'receipt',
        msg: id,
        recipient: 'bob@beta',
        state,
        at: '2026-12-02T12:00:00.000Z',
        seq,
        ...(note === undefined ? {} : { note }),
      },
      b.keys.hostKey,
    );
  assert.equal(acceptReceipt(a, rec('notified', 2, 'woken by channel'), via), 'accepted');
  assert.equal(messageStatus(a, id)?.recipients[0]?.wake, 'channel');
  assert.equal(acceptReceipt(a, rec('read', 3), via), 'accepted');
  assert.deepEqual(
    messageStatus(a, id)?.recipients.map((r) => [r.state, r.wake]),
    [['read', 'channel']],
  );
});

test('the wake queues the notified receipt with "woken by <path>" for a remote sender', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const wire = a.store.outbox.forMessage(id)[0]?.wire;
  assert.ok(wire !== undefined);
  assert.equal(receive(b, JSON.parse(wire), { transport: 'test', peerPubkey: a.keys.hostKey.publicKey }), 'accepted');
  takeWake(b, 'bob', 'hook');
  const receipts = b.store.db.all<{ wire: string }>("SELECT wire FROM outbox WHERE kind = 'receipt' AND msg_id = ? AND state = 'queued'", id);
  assert.equal(receipts.length, 1);
  assert.match(receipts[0]?.wire ?? '', /"note":"woken by hook"/);
  assert.match(receipts[0]?.wire ?? '', /"state":"notified"/);
});

test('the loop guard: a ping-pong past the budget stops waking, mail still delivered, the owner alerted once; owner mail or resume lifts it', () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann', 'al']);
  setGuardSettings(a.store, { budget: 4, windowMs: 60_000 });
  const root = sendMail(a, { from: 'al', to: ['ann'], subject: 'ping', body: 'x' }).id;
  let last = root;
  const woken: boolean[] = [];
  for (let i = 0; i < 8; i++) {
    const [from, to] = i % 2 === 0 ? ['ann', 'al'] : ['al', 'ann'];
    clock.advance(1000);
    // each side is woken for what it got, then answers
    const batch = takeWake(a, from as string, 'exec');
    woken.push(batch.woken.length > 0);
    last = sendMail(a, { from: from as string, to: [to as string], subject: 'pong', body: 'x', replyTo: last }).id;
  }
  // messages 1..4 of the pair wake; the 5th (and later) are held
  assert.deepEqual(woken, [true, true, true, true, false, false, false, false]);
  assert.equal(a.store.mail.inbox('ann', 100, false).length + a.store.mail.inbox('al', 100, false).length, 9, 'every message delivered');
  const alerts = a.store.mail.inbox('owner', 100, false).filter((m) => m.kind === 'alert');
  assert.equal(alerts.length, 1, 'the owner is alerted once');
  assert.match(alerts[0]?.subject ?? '', new RegExp(`loop guard: wakes stopped for thread ${root}`));
  assert.equal(alerts[0]?.thread, root, 'the alert is in the thread: a reply to it lifts the guard');
  assert.deepEqual(
    heldThreads(a.store).map((t) => t.thread),
    [root],
  );
  takeWake(a, 'ann', 'exec');
  assert.match(messageStatus(a, last)?.recipients[0]?.wake ?? '', /^none \(held by the loop guard/);
  // the owner resumes: the next message wakes again, and counting starts afresh
  resumeThread(a, root);
  assert.equal(heldThreads(a.store).length, 0);
  last = sendMail(a, { from: 'al', to: ['ann'], subject: 'again', body: 'x', replyTo: last }).id;
  assert.equal(takeWake(a, 'ann', 'hook').woken.at(-1)?.notice.id, last);
  // trip again, then a message from the owner in the thread lifts it
  for (let i = 0; i < 5; i++)
    last = sendMail(a, { from: i % 2 === 0 ? 'ann' : 'al', to: [i % 2 === 0 ? 'al' : 'ann'], subject: 'p', body: 'x', replyTo: last }).id;
  takeWake(a, 'al', 'hook');
  assert.equal(heldThreads(a.store).length, 1);
  sendMail(a, { from: 'owner', to: ['ann', 'al'], subject: 'enough, carry on', body: 'x', replyTo: last });
  last = sendMail(a, { from: 'al', to: ['ann'], subject: 'ok', body: 'x', replyTo: last }).id;
  assert.ok(takeWake(a, 'ann', 'channel').woken.some((w) => w.notice.id === last));
  assert.equal(heldThreads(a.store).length, 0);
  assert.throws(() => resumeThread(a, root), /holds no thread/);
});

test('the guard counts inside its window only', () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann', 'al']);
  setGuardSettings(a.store, { budget: 2, windowMs: 10_000 });
  let last = sendMail(a, { from: 'al', to: ['ann'], subject: 'p', body: 'x' }).id;
  for (let i = 0; i < 6; i++) {
    clock.advance(6_000);
    last = sendMail(a, { from: i % 2 === 0 ? 'ann' : 'al', to: [i % 2 === 0 ? 'al' : 'ann'], subject: 'p', body: 'x', replyTo: last }).id;
  }
  assert.equal(takeWake(a, 'ann', 'exec').held.length, 0, 'at most 2 of the pair in any 10 s');
  assert.throws(() => setGuardSettings(a.store, { budget: 0 }), /budget must be/);
});
