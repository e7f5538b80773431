// The outbox with an injected clock: backoff, the 72 h alert, rejection alerts, and a peer's
// verified call making its rows due at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, BACKOFF_MAX_MS } from '../../src/host/core/outbox-pace.ts';
import { DELIVERY_DEADLINE_MS, flushOutbox } from '../../src/host/outbox.ts';
import { ackMessage, listInbox } from '../../src/host/mailbox.ts';
import { messageStatus } from '../../src/host/core/receipts.ts';
import { sendMail } from '../../src/host/send.ts';
import { lanCall, LanTransport } from '../../src/host/transport/lan/client.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test('backoff doubles from 5 s and stops at 1 h', () => {
  assert.deepEqual([0, 1, 2, 3].map(backoffMs), [5_000, 10_000, 20_000, 40_000]);
  assert.equal(backoffMs(10), BACKOFF_MAX_MS);
  assert.equal(backoffMs(1000), BACKOFF_MAX_MS);
});

test('failed deliveries back off, and after 72 h the sender gets an alert from mbx', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  const peer = a.store.peers.get('beta');
  assert.ok(peer !== undefined);
  a.store.peers.pin({ ...peer, addr: 'http://127.0.0.1:1' }, clock.now);
  const lan = new LanTransport(a);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'plans', body: 'x' });
  const row = () => a.store.outbox.forMessage(id)[0] ?? assert.fail('no row');
  assert.equal(await flushOutbox(a, lan), 1);
  assert.equal(row().attempts, 1);
  assert.equal(row().next_at, clock.now + 5_000);
  clock.now += 4_999;
  assert.equal(await flushOutbox(a, lan), 0, 'not due before its backoff');
  clock.now += 1;
  assert.equal(await flushOutbox(a, lan), 1);
  assert.equal(row().next_at, clock.now + 10_000);
  assert.equal(row().state, 'queued');
  assert.match(row().last_error ?? '', /cannot reach/);

  clock.now = row().created_at + DELIVERY_DEADLINE_MS - 1;
  await flushOutbox(a, lan);
  assert.equal(row().state, 'queued', 'not given up before 72 h');
  clock.now += 2;
  await flushOutbox(a, lan);
  assert.equal(row().state, 'undelivered');
  const alerts = listInbox(a, 'ann');
  assert.equal(alerts.length, 1);
  assert.equal(alerts[0]?.from_addr, 'mbx@alpha');
  assert.equal(alerts[0]?.subject, 'Undelivered to beta: plans');
  assert.equal(alerts[0]?.kind, 'alert');
});

test("a peer's verified call makes its waiting rows due at once", async () => {
  const clock = new TestClock();
  const { a, b, aUrl } = await pairedHosts(clock);
  const peer = a.store.peers.get('beta') ?? assert.fail();
  a.store.peers.pin({ ...peer, addr: 'http://127.0.0.1:1' }, clock.now);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  await flushOutbox(a, new LanTransport(a));
  assert.ok((a.store.outbox.forMessage(id)[0]?.next_at ?? 0) > clock.now);
  const answer = await lanCall(aUrl, 'GET', '/v1/enc-key', undefined, b);
  assert.equal(answer.status, 200);
  assert.equal(a.store.outbox.forMessage(id)[0]?.next_at, clock.now);
});

test('a rejected envelope settles its row and alerts its sender', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['nobody@beta'], subject: 'hi', body: 'x' });
  await flushOutbox(a, new LanTransport(a));
  const row = a.store.outbox.forMessage(id)[0];
  assert.equal(row?.state, 'rejected');
  assert.equal(row?.last_error, 'rejected:unknown recipient nobody@beta');
  const alerts = listInbox(a, 'ann');
  assert.deepEqual(
    alerts.map((m) => [m.from_addr, m.subject]),
    [['mbx@alpha', 'Rejected by beta: hi']],
  );
  assert.equal(await flushOutbox(a, new LanTransport(a)), 0, 'a rejected row is not retried');
});

test('receipts still queued are superseded by newer ones for the same delivery', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  await flushOutbox(a, new LanTransport(a));
  listInbox(b, 'bob');
  ackMessage(b, id, 'bob', null);
  const due = b.store.outbox.due(clock.now, 100).filter((r) => r.kind === 'receipt');
  assert.deepEqual(
    due.map((r) => r.item_id),
    [`receipt:${id}:bob@beta:3`],
    'delivered (1) and notified (2) were superseded by acked (3)',
  );
  await flushOutbox(b, new LanTransport(b));
  assert.equal(messageStatus(a, id)?.recipients[0]?.state, 'acked');
});

test('rows for a host that was unpaired are rejected and their senders alerted', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'gone', body: 'x' });
  a.store.peers.remove('beta');
  await flushOutbox(a, new LanTransport(a));
  assert.deepEqual(
    listInbox(a, 'ann').map((m) => m.subject),
    ['Rejected by beta: gone'],
  );
});
