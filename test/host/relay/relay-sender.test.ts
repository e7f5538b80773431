// The sender side against a real relay (design §3, §6, §10): rejections keep the row with backoff and
// next_at is respected; a relay-accepted row waits for its delivery receipt (over the relay or the
// LAN), or ends at the sender's own deadline (worded for a pre-0.5.3 peer), or at the relay's
// signed expiry notice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptReceipt } from '../../../src/host/core/receipts.ts';
import { listInbox } from '../../../src/host/mailbox.ts';
import { sendMail } from '../../../src/host/send.ts';
import { RELAY_DEADLINE_GRACE_MS } from '../../../src/host/transport/relay/relay-deadlines.ts';
import { DEFAULT_RETENTION_MS } from '../../../src/host/relay-client/session.ts';
import { signReceipt } from '../../../src/protocol/records/receipt.ts';
import { sweep } from '../../../src/relay/core/sweep.ts';
import type { HostNode } from '../../../src/host/core/node.ts';
import { relayWorld, tick, tickUntilRow } from './relay-fixtures.ts';

function rowOf(node: HostNode, id: string) {
  return node.store.outbox.forMessage(id)[0] ?? assert.fail('no row');
}

function alerts(node: HostNode, agent: string): string[] {
  return listInbox(node, agent)
    .filter((m) => m.kind === 'alert')
    .map((m) => m.subject);
}

test('a 200 with a rejected result keeps the row with backoff, and next_at is respected', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'early', body: 'x' });
  await tick(a); // LAN fails; the peer is now known unreachable
  world.clock.now = rowOf(a.node, id).next_at;
  await tick(a); // beta never enrolled: the relay answers 200 with rejected:target not enrolled
  const row = rowOf(a.node, id);
  assert.equal(row.state, 'queued');
  assert.equal(row.last_error, 'relay: rejected:target not enrolled');
  assert.equal(row.attempts, 2);
  assert.ok(row.next_at > world.clock.now);
  await tick(b); // beta enrols now
  world.clock.now = row.next_at - 1;
  await tick(a);
  assert.equal(rowOf(a.node, id).attempts, 2, 'not pushed before next_at');
  assert.equal(rowOf(a.node, id).state, 'queued');
  world.clock.now = row.next_at;
  await tick(a);
  assert.equal(rowOf(a.node, id).state, 'relay-accepted');
});

test('a relay-accepted row is settled by a delivery receipt that comes over the LAN', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'lan receipt', body: 'x' });
  await tickUntilRow(world, a, id, 'relay-accepted');
  const signed = signReceipt(
    { v: 1, type: 'receipt', msg: id, recipient: 'bob@beta', state: 'delivered', at: new Date(world.clock.now).toISOString(), seq: 1 },
    b.node.keys.hostKey,
  );
  assert.equal(acceptReceipt(a.node, signed, { transport: 'lan', peerPubkey: b.node.keys.hostKey.publicKey }), 'accepted');
  assert.equal(rowOf(a.node, id).state, 'settled');
});

test('the sender deadline without any relay notice: a target that never sent a receipt may be older than 0.5.3', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'to an old host', body: 'x' });
  await tickUntilRow(world, a, id, 'relay-accepted');
  const acceptedAt = rowOf(a.node, id).relay_accepted_at ?? assert.fail('no accepted_at');
  world.clock.now = acceptedAt + DEFAULT_RETENTION_MS + RELAY_DEADLINE_GRACE_MS - 1;
  await tick(a);
  assert.equal(rowOf(a.node, id).state, 'relay-accepted', 'not before the deadline');
  world.clock.now += 1;
  await tick(a);
  assert.equal(rowOf(a.node, id).state, 'unconfirmed');
  assert.deepEqual(alerts(a.node, 'ann'), ['No delivery confirmation from beta: to an old host']);
  assert.match(listInbox(a.node, 'ann')[0]?.body ?? '', /older than 0\.5\.3/);
});

test('the sender deadline for a target that sends receipts says the mail is unconfirmed', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  const first = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'first', body: 'x' }).id;
  await tickUntilRow(world, a, first, 'relay-accepted');
  for (let i = 0; i < 4; i++) {
    await tick(b);
    world.clock.now += 60 * 60 * 1000;
  }
  await tick(a);
  assert.equal(rowOf(a.node, first).state, 'settled');
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'lost one', body: 'x' });
  await tickUntilRow(world, a, id, 'relay-accepted');
  world.clock.now = (rowOf(a.node, id).relay_accepted_at ?? 0) + DEFAULT_RETENTION_MS + RELAY_DEADLINE_GRACE_MS;
  await tick(a);
  assert.equal(rowOf(a.node, id).state, 'unconfirmed');
  assert.deepEqual(alerts(a.node, 'ann'), ['Undelivered/unconfirmed to beta: lost one']);
});

test("the relay's signed expiry notice marks the row expired and tells the sender", async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'never pulled', body: 'x' });
  await tickUntilRow(world, a, id, 'relay-accepted');
  world.clock.now = (rowOf(a.node, id).relay_accepted_at ?? 0) + DEFAULT_RETENTION_MS + 1;
  await sweep(world.relay.service.core.context);
  await tick(a);
  assert.equal(rowOf(a.node, id).state, 'expired');
  assert.deepEqual(alerts(a.node, 'ann'), ['Undelivered to beta: never pulled']);
  assert.equal(a.node.store.relay.quarantineCount(), 0);
});
