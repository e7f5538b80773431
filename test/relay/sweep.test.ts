// Retention and expiry (design §6, protocol.md §3.9, §7.10) with a moved clock: the rules through the
// core on a real store, and the running relay's own sweeps through the service.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromBase64 } from '../../src/protocol/base64.ts';
import { expiredItemId, verifyExpiredNotice } from '../../src/protocol/records/expired.ts';
import { sweepDedupStep } from '../../src/relay/store/rules/dedup-sweep.ts';
import { dedupHorizonMs, retentionMs } from '../../src/relay/config.ts';
import { sweep } from '../../src/relay/core/sweep.ts';
import {
  enrolledHost,
  pushEnvelope,
  pushOne,
  receiptItem,
  startTestRelay,
  testHost,
  type HostKeys,
  type PushedEnvelope,
  type PushingHost,
  type TestHost,
} from '../helpers/relay-fixture.ts';
import { enrolledAtCore, startTestCore, type CoreHost, type TestCore } from '../helpers/relay-core-fixture.ts';
import { TestClock } from '../helpers/clock.ts';
import { tempDir } from '../helpers/processes.ts';

type Page = { head_seq: number; items: Array<{ seq: number; kind: string; item_id: string; sender_pubkey: string; wire_b64: string }> };

const DAY_MS = 86_400_000;

/** A core whose expiry rules run only when a test calls sweep (no service, no timer). */
async function setup(): Promise<{ relay: TestCore; a: CoreHost; b: CoreHost }> {
  const relay = await startTestCore();
  return { relay, a: await enrolledAtCore(relay, 'laptop'), b: await enrolledAtCore(relay, 'desk') };
}

/**
 * Makes the queued item `itemId` from a to b one whose expiry lies beyond the dedup horizon (as if
 * accepted under a longer retention): re-inserted with the same acceptance time and a 100-day expiry.
 */
async function keepPastHorizon(relay: TestCore, a: HostKeys, b: HostKeys, itemId: string): Promise<void> {
  await relay.context.store.transaction(async (tx) => {
    const row = await tx.items.dedup(a.key.publicKey, itemId, b.key.publicKey);
    assert.ok(row);
    await tx.items.delete(b.key.publicKey, row.seq);
    await sweepDedupStep(tx.items, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, { after: 0, limit: 10, maxWalk: 10 });
    await tx.items.insert(
      {
        targetPubkey: b.key.publicKey,
        kind: 'envelope',
        itemId,
        senderPubkey: a.key.publicKey,
        wire: new TextEncoder().encode('{}'),
        wireHash: row.wireHash,
        acceptedAt: row.acceptedAt,
        expiresAt: row.acceptedAt + 100 * DAY_MS,
        account: null,
      },
      relay.clock.now,
    );
  });
}

/** A fresh envelope from `from` to `to`, accepted. */
async function pushAcceptedEnvelope(relay: { clock: TestClock }, from: PushingHost, to: HostKeys): Promise<PushedEnvelope> {
  const sent = await pushEnvelope(from, to, relay.clock.now);
  assert.equal(sent.status, 'accepted');
  return sent;
}

test('an expired envelope vanishes, its sender pulls a signed notice, a late retry is a duplicate', async () => {
  const { relay, a, b } = await setup();
  const sent = await pushAcceptedEnvelope(relay, a, b);
  const acceptedAt = relay.clock.now;
  relay.clock.advance(retentionMs(relay.context.config) - 1);
  assert.deepEqual(await sweep(relay.context), { expired: 0, notices: 0, dedupSwept: 0 }, 'not expired a millisecond early');

  relay.clock.advance(1);
  assert.deepEqual(await sweep(relay.context), { expired: 1, notices: 1, dedupSwept: 0 });
  assert.equal(((await b.api.pull(0)).body as Page).items.length, 0, 'the target never gets it');

  const page = (await a.api.pull(0)).body as Page;
  assert.equal(page.items.length, 1);
  const notice = page.items[0];
  assert.equal(notice?.kind, 'expired');
  assert.equal(notice?.item_id, expiredItemId(sent.id, b.key.publicKey));
  assert.equal(notice?.sender_pubkey, relay.relayPubkey);
  const verified = verifyExpiredNotice(fromBase64(notice?.wire_b64 ?? '') ?? new Uint8Array(), relay.relayPubkey);
  assert.deepEqual(verified, {
    v: 1,
    type: 'relay-expired',
    item_id: sent.id,
    target_pubkey: b.key.publicKey,
    accepted_at: new Date(acceptedAt).toISOString(),
    expired_at: new Date(relay.clock.now).toISOString(),
  });
  assert.equal(Date.parse(verified?.accepted_at ?? ''), Date.parse(String(sent.accept?.['at'])), "accepted_at is the accept receipt's at");

  const retry = await pushOne(a, sent.item);
  assert.equal(retry?.status, 'duplicate', 'the dedup row stayed as a tombstone');
  assert.equal(((await b.api.pull(0)).body as Page).items.length, 0, 'never a second delivery');
  assert.deepEqual(await sweep(relay.context), { expired: 0, notices: 0, dedupSwept: 0 });
  assert.equal(((await a.api.pull(0)).body as Page).items.length, 1, 'the notice is queued once');
});

test('receipts expire silently, and a revoked sender gets no notice', async () => {
  const { relay, a, b } = await setup();
  const c = await enrolledAtCore(relay, 'tablet');
  await c.api.push([receiptItem(c, a, '01JCZ8Q0000000000000000000', 'delivered', 1, relay.clock.now)]);
  await pushAcceptedEnvelope(relay, b, a);
  await relay.context.store.transaction(async (tx) => {
    const enrolment = await tx.enrolments.get(b.key.publicKey);
    assert.ok(enrolment);
    await tx.enrolments.put({ ...enrolment, revokedAt: relay.clock.now });
  });
  relay.clock.advance(retentionMs(relay.context.config));
  assert.deepEqual(await sweep(relay.context), { expired: 2, notices: 0, dedupSwept: 0 });
  assert.equal(((await a.api.pull(0)).body as Page).items.length, 0);
  assert.equal(((await c.api.pull(0)).body as Page).head_seq, 0, "no notice for the receipt's sender");
  const bQueue = await relay.context.store.read((tx) => tx.items.headSeq(b.key.publicKey));
  assert.equal(bQueue, 0, 'none for the revoked sender');
});

test('sweeps go in bounded batches, one transaction each', async () => {
  const { relay, a, b } = await setup();
  for (let i = 0; i < 5; i += 1) await pushAcceptedEnvelope(relay, a, b);
  relay.clock.advance(retentionMs(relay.context.config));
  assert.deepEqual(await sweep(relay.context, { itemBatch: 2 }), { expired: 5, notices: 5, dedupSwept: 0 });
  assert.equal(((await a.api.pull(0)).body as Page).items.length, 5);
});

test('dedup rows go after the horizon, never while their item exists', async () => {
  const { relay, a, b } = await setup();
  const ctx = relay.context;
  const sent = await pushAcceptedEnvelope(relay, a, b);
  const kept = await pushAcceptedEnvelope(relay, a, b);
  await keepPastHorizon(relay, a, b, kept.id);
  relay.clock.advance(dedupHorizonMs(ctx.config));
  const first = await sweep(ctx);
  assert.equal(first.expired, 1);
  assert.equal(first.dedupSwept, 0, 'not at the horizon, only after it');
  relay.clock.advance(1);
  const second = await sweep(ctx);
  assert.equal(second.dedupSwept, 1, 'only the tombstone of the expired item');
  await ctx.store.transaction(async (tx) => {
    assert.equal(await tx.items.dedup(a.key.publicKey, sent.id, b.key.publicKey), null);
    assert.notEqual(await tx.items.dedup(a.key.publicKey, kept.id, b.key.publicKey), null, 'its item still exists');
  });
  const again = await pushOne(a, sent.item);
  assert.equal(again?.status, 'accepted', 'past the horizon the id is new again');
});

/** Waits (bounded) until `ready` holds: the sweep runs on the service's own timer. */
async function eventually(ready: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail('the service never swept');
}

test('the running relay sweeps at start and then on every interval', async () => {
  const dir = tempDir();
  const clock = new TestClock();
  const first = await startTestRelay({ dir, clock });
  const [a, b] = [await enrolledHost(first, 'laptop'), await enrolledHost(first, 'desk')];
  await pushAcceptedEnvelope(first, a, b);
  await first.stop();

  clock.advance(retentionMs(first.service.core.context.config));
  const second = await startTestRelay({ dir, clock, config: { sweep_interval_ms: 100 } });
  const [a2, b2] = [a, b].map((h) => ({ ...testHost(second, h.name, h.key), enc: h.enc }));
  const queued = async (host: TestHost): Promise<number> => ((await host.api.pull(0)).body as Page).items.length;
  await eventually(async () => (await queued(a2 as TestHost)) === 1);
  assert.equal(await queued(b2 as TestHost), 0, 'the sweep at start expired it');

  const later = await pushAcceptedEnvelope(second, a2 as TestHost, b2 as TestHost);
  clock.advance(retentionMs(second.service.core.context.config));
  await eventually(async () => (await queued(b2 as TestHost)) === 0);
  const notices = ((await (a2 as TestHost).api.pull(0)).body as Page).items.map((i) => i.item_id);
  assert.deepEqual(notices, [expiredItemId(later.id, b.key.publicKey)], 'the periodic sweep expired it (and the first notice, now old too)');
});

test('one sweep goes on past more still-queued dedup rows than a step walks', async () => {
  const { relay, a, b } = await setup();
  const ctx = relay.context;
  // two items kept beyond the horizon at the head of the dedup table
  for (let i = 0; i < 2; i += 1) await keepPastHorizon(relay, a, b, (await pushAcceptedEnvelope(relay, a, b)).id);
  for (let i = 0; i < 3; i += 1) await pushAcceptedEnvelope(relay, a, b);
  relay.clock.advance(retentionMs(ctx.config));
  assert.deepEqual(await sweep(ctx), { expired: 3, notices: 3, dedupSwept: 0 });
  relay.clock.advance(dedupHorizonMs(ctx.config) + 1);
  // one row walked per transaction: the two live rows, then each tombstone (the three items' and,
  // once they expired too, the three expiry notices')
  assert.deepEqual(await sweep(ctx, { dedupBatch: 1, dedupWalk: 1 }), { expired: 3, notices: 0, dedupSwept: 6 });
  assert.equal(((await b.api.pull(0)).body as Page).items.length, 2, 'the kept items are still queued');
});
