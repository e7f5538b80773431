import assert from 'node:assert/strict';
import type { RelayStore } from '../../../../src/relay/store/relay-store.ts';
import { sweepDedupStep } from '../../../../src/relay/store/rules/dedup-sweep.ts';
import { dedupLeft, item, storeTest, type OpenStoreUnderTest } from './harness.ts';

/** One sweep step from the first dedup row, walking far enough for these small tables; returns how many it deleted. */
export async function sweepOnce(store: RelayStore, beforeMs: number, nowMs: number, limit: number): Promise<number> {
  return (await store.transaction((tx) => sweepDedupStep(tx.items, beforeMs, nowMs, { after: 0, limit, maxWalk: 1_000 }))).deleted;
}

/** The dedup sweep (store/rules/dedup-sweep.ts) over this backend's primitives. */
export function describeDedupSweep(open: OpenStoreUnderTest): void {
  storeTest(open, 'the dedup sweep walks rows in acceptance order: it passes over live items and stops at the first younger row', async ({ store }) => {
    const seqs = await store.transaction(async (tx) => {
      const out: Record<string, number> = {};
      // 'skewed' was accepted after 'young' but stamped earlier (the clock stepped back)
      for (const [itemId, acceptedAt] of [
        ['live', 5],
        ['old', 10],
        ['young', 50],
        ['skewed', 20],
      ] as const) {
        out[itemId] = await tx.items.insert(item({ targetPubkey: 'T', itemId, acceptedAt }), 1);
      }
      return out;
    });
    for (const itemId of ['old', 'young', 'skewed']) await store.transaction((tx) => tx.items.delete('T', seqs[itemId] as number));
    const left = async (): Promise<string[]> => dedupLeft(store, 'T', ['live', 'old', 'young', 'skewed']);
    assert.equal(await sweepOnce(store, 40, 60, 100), 1);
    assert.deepEqual(await left(), ['live', 'young', 'skewed'], 'the live item keeps its row; the walk stops at the row accepted at 50');
    assert.equal(await sweepOnce(store, 60, 60, 1), 1, 'the limit holds');
    assert.equal(await sweepOnce(store, 60, 60, 100), 1);
    assert.deepEqual(await left(), ['live']);
  });

  storeTest(open, 'tombstones stamped while the clock ran ahead do not hold back the sweep of those accepted after it', async ({ store }) => {
    const seqs = await store.transaction(async (tx) => {
      const out: Record<string, number> = {};
      // 'ahead' was stamped by a clock a long way ahead; the clock was then set right and 'after' came
      for (const [itemId, acceptedAt] of [
        ['ahead', 1_000_000],
        ['after', 30],
        ['young', 90],
      ] as const) {
        out[itemId] = await tx.items.insert(item({ targetPubkey: 'T', itemId, acceptedAt }), 1);
      }
      return out;
    });
    for (const itemId of ['ahead', 'after', 'young']) await store.transaction((tx) => tx.items.delete('T', seqs[itemId] as number));
    const left = async (): Promise<string[]> => dedupLeft(store, 'T', ['ahead', 'after', 'young']);
    assert.equal(await sweepOnce(store, 40, 100, 100), 1);
    assert.deepEqual(await left(), ['ahead', 'young'], 'the row from the future is never swept early, and the walk stops at the row accepted at 90');
    assert.equal(await sweepOnce(store, 1_000_001, 2_000_000, 100), 2);
    assert.deepEqual(await left(), []);
  });

  storeTest(open, 'a dedup sweep step walks at most maxWalk rows and says where the next one goes on', async ({ store }) => {
    const seqs = await store.transaction(async (tx) => {
      const out: Record<string, number> = {};
      // three rows whose items are still queued at the head (retention was lowered), then two tombstones
      for (const [itemId, acceptedAt] of [
        ['live-1', 1],
        ['live-2', 2],
        ['live-3', 3],
        ['gone-1', 4],
        ['gone-2', 5],
        ['young', 90],
      ] as const) {
        out[itemId] = await tx.items.insert(item({ targetPubkey: 'T', itemId, acceptedAt }), 1);
      }
      return out;
    });
    for (const itemId of ['gone-1', 'gone-2', 'young']) await store.transaction((tx) => tx.items.delete('T', seqs[itemId] as number));
    const step = (after: number, limit: number) => store.transaction((tx) => sweepDedupStep(tx.items, 50, 100, { after, limit, maxWalk: 2 }));
    const first = await step(0, 100);
    assert.equal(first.deleted, 0, 'two live rows walked, nothing to delete yet');
    assert.ok(first.resumeAfter !== null);
    const second = await step(first.resumeAfter, 100);
    assert.equal(second.deleted, 1, 'the third live row and the first tombstone');
    assert.ok(second.resumeAfter !== null && second.resumeAfter > first.resumeAfter);
    const third = await step(second.resumeAfter, 1);
    assert.equal(third.deleted, 1, 'the limit of one: the second tombstone');
    assert.ok(third.resumeAfter !== null, 'stopped by its limit, not at the end');
    const last = await step(third.resumeAfter, 100);
    assert.deepEqual(last, { deleted: 0, resumeAfter: null }, 'the walk ends at the row accepted at 90');
    const left = await dedupLeft(store, 'T', Object.keys(seqs));
    assert.deepEqual(left, ['live-1', 'live-2', 'live-3', 'young']);
    for (const limits of [
      { after: 0, limit: 0, maxWalk: 2 },
      { after: 0, limit: 2, maxWalk: 0 },
    ]) {
      await assert.rejects(
        store.transaction((tx) => sweepDedupStep(tx.items, 50, 100, limits)),
        RangeError,
        'a step that could not move on is refused',
      );
    }
  });
}
