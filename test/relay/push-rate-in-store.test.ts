// The push rate as relay processes sharing one store count it (core/push-rate.ts): inside the
// transaction of the request's first item, so that it costs no commit of its own, kept even when
// every item of the request is rejected, and once whatever order reruns put the items in.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envelopeItem, envelopeItemTo, sealedEnvelope } from '../helpers/relay-fixture.ts';
import { enrolledAtCore, startTestCore } from '../helpers/relay-core-fixture.ts';
import { hostKeys } from '../helpers/relay-fixture.ts';
import { RATE_WINDOW_MS } from '../../src/common/rate-window.ts';
import { pushRateKey, storePushRate } from '../../src/relay/core/push-rate.ts';

const statuses = (answer: { body: Record<string, unknown> }): string[] => (answer.body['results'] as Array<{ status: string }>).map((r) => r.status);

test('a single-item push is one transaction: the store-kept rate count joins the item', async () => {
  const relay = await startTestCore({ pushRateInStore: true });
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  const before = relay.transactions();
  assert.deepEqual(statuses(await a.api.push([envelopeItemTo(a, b, relay.clock.now).item])), ['accepted']);
  assert.equal(relay.transactions() - before, 1, 'no transaction of its own for the count');
});

test('requests whose items are all rejected still count against the rate', async () => {
  const relay = await startTestCore({ pushRateInStore: true, config: { pushes_per_minute: 2 } });
  const a = await enrolledAtCore(relay, 'laptop');
  const stranger = hostKeys('stranger');
  const toStranger = () => envelopeItemTo(a, stranger, relay.clock.now).item;
  assert.deepEqual(statuses(await a.api.push([toStranger()])), ['rejected:target not enrolled']);
  assert.deepEqual(statuses(await a.api.push([toStranger()])), ['rejected:target not enrolled']);
  assert.deepEqual(statuses(await a.api.push([toStranger()])), ['rejected:rate'], 'the two rejected requests were counted');
});

test('a first item refused before the store still counts its request, and the others follow the verdict', async () => {
  const relay = await startTestCore({ pushRateInStore: true, config: { pushes_per_minute: 2 } });
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  const request = () => [{ kind: 'envelope', item_id: '', targets: [] }, envelopeItemTo(a, b, relay.clock.now).item, { kind: 'bad' }];
  assert.deepEqual(statuses(await a.api.push(request())), ['rejected:bad item id', 'accepted', 'rejected:bad item id']);
  assert.deepEqual(statuses(await a.api.push(request())), ['rejected:bad item id', 'accepted', 'rejected:bad item id']);
  assert.deepEqual(statuses(await a.api.push(request())), ['rejected:rate', 'rejected:rate', 'rejected:rate']);
  const head = (await b.api.pull(0)).body as { items: unknown[] };
  assert.equal(head.items.length, 2, 'nothing of the request over the rate was stored');
  relay.clock.advance(60_000);
  const env = sealedEnvelope(a, b, relay.clock.now);
  assert.deepEqual(statuses(await a.api.push([envelopeItem(env.id, [{ host: b, wire: env.wire }])])), ['accepted'], 'a new minute, a new window');
});

/** How many requests the store's window of `sender` holds (counting one more, in a transaction rolled back). */
async function windowCount(relay: Awaited<ReturnType<typeof startTestCore>>, sender: string): Promise<number> {
  let seen = 0;
  await relay.context.store
    .transaction(async (tx) => {
      seen = (await tx.rateWindows.count(pushRateKey(sender), relay.clock.now, RATE_WINDOW_MS)) - 1;
      throw new Error('roll back the probe');
    })
    .catch(() => {});
  return seen;
}

test('an item that runs before the first one has counted (a deadlock rerun reordered them) counts in its place, once', async () => {
  const relay = await startTestCore();
  const gate = storePushRate(5).open('sender', relay.clock.now);
  assert.equal(await relay.context.store.transaction((tx) => gate.admits(tx, 1)), true);
  assert.equal(await relay.context.store.transaction((tx) => gate.admits(tx, 0)), true);
  assert.equal(await windowCount(relay, 'sender'), 1);
});

test("the counting item's transaction rolled back: the next item to run counts in its place, and the rerun does not count again", async () => {
  const relay = await startTestCore();
  const gate = storePushRate(1).open('sender', relay.clock.now);
  await assert.rejects(
    relay.context.store.transaction(async (tx) => {
      await gate.admits(tx, 0);
      gate.rolledBack(0);
      throw new Error('deadlock victim');
    }),
  );
  assert.equal(gate.known(), null, 'the rolled-back verdict is forgotten');
  assert.equal(await relay.context.store.transaction((tx) => gate.admits(tx, 1)), true, 'item 1 counts: the window holds this request once');
  assert.equal(await relay.context.store.transaction((tx) => gate.admits(tx, 0)), true, 'the rerun reads that verdict');
  assert.equal(await windowCount(relay, 'sender'), 1);
});

test('over the limit after a rollback: the items that run next are refused by a count that commits with them', async () => {
  const relay = await startTestCore();
  const first = storePushRate(1).open('sender', relay.clock.now);
  assert.equal(await relay.context.store.transaction((tx) => first.admits(tx, 0)), true, 'an earlier request fills the window');
  const gate = storePushRate(1).open('sender', relay.clock.now);
  await assert.rejects(
    relay.context.store.transaction(async (tx) => {
      await gate.admits(tx, 0);
      gate.rolledBack(0);
      throw new Error('deadlock victim');
    }),
  );
  assert.equal(await relay.context.store.transaction((tx) => gate.admits(tx, 1)), false);
  assert.equal(await windowCount(relay, 'sender'), 2);
});
