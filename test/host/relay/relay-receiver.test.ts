// The receiver side against a real relay (design §4, §9): items in seq order whatever the page
// order, repeats harmless, refused items quarantined (never dropped) with the position moving past
// them, receipts over the relay, and key routing (a host squatting a name gets nothing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ackMessage, listInbox } from '../../../src/host/mailbox.ts';
import { messageStatus } from '../../../src/host/core/receipts.ts';
import { sendMail } from '../../../src/host/send.ts';
import { applyPulledItems, type PullReport } from '../../../src/host/transport/relay/relay-receive.ts';
import { ensureSession } from '../../../src/host/relay-client/session.ts';
import { isPlainObject } from '../../../src/protocol/validate.ts';
import { enrolledHost, envelopeItem, sealedEnvelope } from '../../helpers/relay-fixture.ts';
import { rawHost, relayWorld, tick, tickUntilRow, type RelayWorld } from './relay-fixtures.ts';

async function relayAcceptedMail(world: RelayWorld, subjects: string[]): Promise<string[]> {
  await tick(world.b);
  const ids = subjects.map((subject) => sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject, body: subject }).id);
  for (const id of ids) await tickUntilRow(world, world.a, id, 'relay-accepted');
  return ids;
}

test('a reordered page with a repeated item is applied in seq order, once; a repeated pull is a duplicate', async () => {
  const world = await relayWorld();
  const ids = await relayAcceptedMail(world, ['one', 'two', 'three']);
  const { b } = world;
  const session = await ensureSession(b.node);
  assert.ok(session.ok);
  const epoch = session.session.relay.epoch ?? assert.fail('no epoch');
  const page = await session.session.api.pull(0, 10, epoch);
  const items = isPlainObject(page.body) && Array.isArray(page.body.items) ? (page.body.items as Array<{ seq: number; item_id: string }>) : [];
  assert.equal(items.length, 3);
  const source = { url: session.session.relay.url, epoch, relayPubkey: session.session.relay.relay_pubkey };
  const heard: PullReport[] = [];
  const shuffled = [items[2], items[0], items[1], items[0]];
  const run = applyPulledItems(b.node, source, 0, shuffled, (r) => heard.push(r));
  assert.deepEqual(
    heard.map((r) => r.item.seq),
    items.map((i) => i.seq),
    'seq order, each once',
  );
  assert.deepEqual(
    heard.map((r) => r.result),
    ['accepted', 'accepted', 'accepted'],
  );
  assert.deepEqual(
    heard.map((r) => r.item.item_id),
    ids,
  );
  assert.equal(run.through, items[2]?.seq);
  assert.equal(b.node.store.relay.receivedThrough(source.url, epoch), items[2]?.seq);
  heard.length = 0;
  applyPulledItems(b.node, source, run.through, items, (r) => heard.push(r));
  assert.equal(heard.length, 0, 'items at or below received_through are skipped');
  applyPulledItems(b.node, source, 0, items, (r) => heard.push(r));
  assert.deepEqual(
    heard.map((r) => r.result),
    ['duplicate', 'duplicate', 'duplicate'],
    'a pull from an older position is harmless',
  );
  assert.equal(listInbox(b.node, 'bob').length, 3);
});

test('an item the host refuses goes to quarantine with its reason and bytes; the position moves past it', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  await tick(a);
  // alpha (a paired peer) pushes an envelope sealed to an enc key beta does not hold
  const alphaRaw = rawHost(world, a.node);
  const betaWrongEnc = rawHost(world, b.node);
  const bad = sealedEnvelope(alphaRaw, betaWrongEnc, world.clock.now, 'unopenable');
  const pushed = await alphaRaw.api.push([envelopeItem(bad.id, [{ host: betaWrongEnc, wire: bad.wire }])]);
  assert.equal(pushed.status, 200);
  const good = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'fine', body: 'x' }).id;
  await tickUntilRow(world, a, good, 'relay-accepted');
  await tick(b);
  const quarantined = b.node.store.relay.quarantined();
  assert.equal(quarantined.length, 1);
  assert.equal(quarantined[0]?.item_id, bad.id);
  assert.equal(quarantined[0]?.reason, 'cannot open the sealed body');
  assert.equal(Buffer.from(quarantined[0]?.wire_b64 ?? '', 'base64').toString('utf8'), bad.wire, 'the exact wire is kept');
  assert.deepEqual(
    listInbox(b.node, 'bob').map((m) => m.id),
    [good],
  );
  const relay = b.node.store.relay.get() ?? assert.fail('no relay');
  assert.ok(b.node.store.relay.receivedThrough(relay.url, relay.epoch ?? '') >= (quarantined[0]?.seq ?? Infinity));
});

test("receipts travel as relay items: an ack on beta reaches alpha's status", async () => {
  const world = await relayWorld();
  const [id] = await relayAcceptedMail(world, ['please ack']);
  assert.ok(id !== undefined);
  const { a, b } = world;
  await tick(b);
  ackMessage(b.node, id, 'bob', 'done');
  for (let i = 0; i < 4; i++) {
    await tick(b);
    world.clock.now += 60 * 60 * 1000;
  }
  await tick(a);
  const status = messageStatus(a.node, id) ?? assert.fail('no status');
  assert.deepEqual(
    status.recipients.map((r) => [r.recipient, r.state, r.note]),
    [['bob@beta', 'acked', 'done']],
  );
  assert.equal(a.node.store.outbox.forMessage(id)[0]?.state, 'settled');
});

test("a name squatter never receives a host's mail: items go by the pinned key", async () => {
  const world = await relayWorld();
  const squatter = await enrolledHost({ url: world.relay.url, clock: world.clock }, 'beta');
  const [id] = await relayAcceptedMail(world, ['for the real beta']);
  const stolen = await squatter.api.pull(0);
  assert.equal(stolen.status, 200);
  assert.deepEqual(isPlainObject(stolen.body) ? stolen.body.items : null, []);
  await tick(world.b);
  assert.deepEqual(
    listInbox(world.b.node, 'bob').map((m) => m.id),
    [id],
  );
});
