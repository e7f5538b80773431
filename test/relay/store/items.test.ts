import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openSqliteRelayStore } from '../../../src/relay/store/sqlite/index.ts';
import type { SqliteRelayStore } from '../../../src/relay/store/sqlite/index.ts';
import { freshStore, item, RELAY_KEY } from './store-fixtures.ts';

/** One sweep step from the first dedup row, walking far enough for these small tables; returns how many it deleted. */
async function sweepOnce(store: SqliteRelayStore, beforeMs: number, nowMs: number, limit: number): Promise<number> {
  return (await store.transaction((tx) => tx.sweepDedup(beforeMs, nowMs, { after: 0, limit, maxWalk: 1_000 }))).deleted;
}

test('seq = max(next_seq, now): a clock far behind still allocates above, a jump gives seq = now', async () => {
  const { store } = await freshStore();
  const seqs = await store.transaction(async (tx) => [
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'a' }), 1_000_000),
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'b' }), 5),
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'c' }), 2_000_000),
    await tx.insertItem(item({ targetPubkey: 'U', itemId: 'a' }), 5),
  ]);
  assert.deepEqual(seqs, [1_000_000, 1_000_001, 2_000_000, 5]);
  const heads = await store.transaction(async (tx) => [await tx.headSeq('T'), await tx.headSeq('U'), await tx.headSeq('nobody')]);
  assert.deepEqual(heads, [2_000_000, 5, 0]);
  await store.close();
});

test('seqs are never reused after everything was acked and the store reopened', async () => {
  const { store, dir } = await freshStore();
  const seqs = await store.transaction(async (tx) => [
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'a' }), 10),
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'b' }), 10),
  ]);
  assert.deepEqual(seqs, [10, 11]);
  assert.equal(await store.transaction((tx) => tx.ack('T', 11)), 2);
  await store.close();
  const again = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY });
  const [next, head, acked] = await again.transaction(async (tx) => [
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'c' }), 0), await tx.headSeq('T'), await tx.ackedThrough('T'),
  ]);
  assert.deepEqual([next, head, acked], [12, 12, 11]);
  await again.close();
});

test('dedup rows are found by (sender, item id, target) and a second insert of the same key is refused', async () => {
  const { store } = await freshStore();
  const first = item({ targetPubkey: 'T', itemId: 'm1', senderPubkey: 'S', acceptedAt: 500 });
  const seq = await store.transaction((tx) => tx.insertItem(first, 42));
  const [row, otherTarget, otherSender] = await store.transaction(async (tx) => [
    await tx.getDedup('S', 'm1', 'T'), await tx.getDedup('S', 'm1', 'U'), await tx.getDedup('R', 'm1', 'T'),
  ]);
  assert.deepEqual(row, { senderPubkey: 'S', itemId: 'm1', targetPubkey: 'T', wireHash: first.wireHash, seq, acceptedAt: 500 });
  assert.equal(otherTarget, null);
  assert.equal(otherSender, null);
  await assert.rejects(store.transaction((tx) => tx.insertItem(item({ targetPubkey: 'T', itemId: 'm1', senderPubkey: 'S' }), 43)), /UNIQUE/);
  const [page, head] = await store.transaction(async (tx) => [await tx.pull('T', 0, 10, 10_000), await tx.headSeq('T')] as const);
  assert.equal(page.items.length, 1);
  assert.equal(head, seq, 'the refused insert allocated nothing');
  await store.close();
});

test('pull pages by count in seq order, with the exact wire bytes and a correct `more`', async () => {
  const { store } = await freshStore();
  const wire = new Uint8Array([0, 255, 1, 254]);
  await store.transaction(async (tx) => {
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'binary', wire, kind: 'receipt' }), 1);
    for (const id of ['b', 'c', 'd', 'e']) await tx.insertItem(item({ targetPubkey: 'T', itemId: id }), 1);
    await tx.insertItem(item({ targetPubkey: 'OTHER', itemId: 'x' }), 1);
  });
  const first = await store.transaction((tx) => tx.pull('T', 0, 2, 1_000_000), { readOnly: true });
  assert.deepEqual(first.items.map((i) => [i.seq, i.itemId]), [[1, 'binary'], [2, 'b']]);
  assert.equal(first.more, true);
  const binary = first.items[0];
  assert.ok(binary !== undefined);
  assert.deepEqual([...binary.wire], [...wire]);
  assert.equal(binary.kind, 'receipt');
  assert.equal(binary.senderPubkey, item({ targetPubkey: 'T', itemId: 'binary' }).senderPubkey);
  const second = await store.transaction((tx) => tx.pull('T', 2, 2, 1_000_000));
  assert.deepEqual(second.items.map((i) => i.seq), [3, 4]);
  assert.equal(second.more, true);
  const last = await store.transaction((tx) => tx.pull('T', 4, 2, 1_000_000));
  assert.deepEqual(last.items.map((i) => i.seq), [5]);
  assert.equal(last.more, false);
  assert.deepEqual(await store.transaction((tx) => tx.pull('T', 5, 2, 1_000_000)), { items: [], more: false });
  await store.close();
});

test('pull stops before the item that would pass maxBytes, but returns an oversized item alone', async () => {
  const { store } = await freshStore();
  await store.transaction(async (tx) => {
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'a' }, 10), 1);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'b' }, 10), 1);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'c' }, 5), 1);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'd' }, 100), 1);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'e' }, 10), 1);
  });
  const exact = await store.transaction((tx) => tx.pull('T', 0, 10, 25));
  assert.deepEqual(exact.items.map((i) => i.itemId), ['a', 'b', 'c'], 'exactly maxBytes fits');
  assert.equal(exact.more, true);
  const tight = await store.transaction((tx) => tx.pull('T', 0, 10, 24));
  assert.deepEqual(tight.items.map((i) => i.itemId), ['a', 'b']);
  const oversized = await store.transaction((tx) => tx.pull('T', 3, 10, 25));
  assert.deepEqual(oversized.items.map((i) => i.itemId), ['d']);
  assert.equal(oversized.more, true);
  const tail = await store.transaction((tx) => tx.pull('T', 4, 10, 25));
  assert.deepEqual(tail.items.map((i) => i.itemId), ['e']);
  assert.equal(tail.more, false);
  await store.close();
});

test('ack deletes seq ≤ through for that target only, and acked_through never goes down', async () => {
  const { store } = await freshStore();
  await store.transaction(async (tx) => {
    for (const id of ['a', 'b', 'c', 'd']) await tx.insertItem(item({ targetPubkey: 'T', itemId: id }), 1);
    await tx.insertItem(item({ targetPubkey: 'U', itemId: 'a' }), 1);
  });
  assert.equal(await store.transaction((tx) => tx.ack('T', 0)), 0);
  assert.equal(await store.transaction((tx) => tx.ack('T', 2)), 2);
  assert.equal(await store.transaction((tx) => tx.ackedThrough('T')), 2);
  assert.equal(await store.transaction((tx) => tx.ack('T', 1)), 0);
  assert.equal(await store.transaction((tx) => tx.ackedThrough('T')), 2, 'a lower ack does not lower acked_through');
  const page = await store.transaction((tx) => tx.pull('T', 0, 10, 10_000));
  assert.deepEqual(page.items.map((i) => i.seq), [3, 4]);
  assert.equal(await store.transaction((tx) => tx.ack('T', 4)), 2);
  assert.equal((await store.transaction((tx) => tx.pull('U', 0, 10, 10_000))).items.length, 1, 'other targets untouched');
  assert.equal(await store.transaction((tx) => tx.ackedThrough('nobody')), 0);
  await store.close();
});

test('expiry: oldest first up to a limit, delete keeps the dedup tombstone, the sweep honours the horizon', async () => {
  const { store } = await freshStore();
  await store.transaction(async (tx) => {
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'late', acceptedAt: 30, expiresAt: 300 }), 1);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'early', acceptedAt: 10, expiresAt: 100 }), 1);
    await tx.insertItem(item({ targetPubkey: 'U', itemId: 'middle', acceptedAt: 20, expiresAt: 200 }), 1);
  });
  const due = await store.transaction((tx) => tx.expiredItems(200, 10));
  assert.deepEqual(due.map((i) => i.itemId), ['early', 'middle']);
  assert.equal('wire' in (due[0] ?? {}), false, 'headers carry no bytes');
  assert.deepEqual((await store.transaction((tx) => tx.expiredItems(200, 1))).map((i) => i.itemId), ['early']);
  assert.deepEqual(await store.transaction((tx) => tx.expiredItems(99, 10)), []);

  for (const header of due) await store.transaction((tx) => tx.deleteItem(header.targetPubkey, header.seq));
  const [tombstone, pageT, pageU] = await store.transaction(async (tx) => [
    await tx.getDedup('sender', 'early', 'T'), await tx.pull('T', 0, 10, 10_000), await tx.pull('U', 0, 10, 10_000),
  ] as const);
  assert.ok(tombstone !== null, 'the dedup row stays as a tombstone');
  assert.deepEqual(pageT.items.map((i) => i.itemId), ['late']);
  assert.deepEqual(pageU.items, []);

  assert.equal(await sweepOnce(store, 10, 1_000, 100), 0, 'accepted at 10 is not before 10');
  assert.equal(await sweepOnce(store, 1_000, 1_000, 1), 1, 'the limit holds');
  assert.equal(await sweepOnce(store, 1_000, 1_000, 100), 1);
  const [early, middle, late] = await store.transaction(async (tx) => [
    await tx.getDedup('sender', 'early', 'T'), await tx.getDedup('sender', 'middle', 'U'), await tx.getDedup('sender', 'late', 'T'),
  ]);
  assert.equal(early, null);
  assert.equal(middle, null);
  assert.ok(late !== null, 'a dedup row whose item still exists is never swept');
  await store.close();
});

test('the dedup sweep walks rows in acceptance order: it passes over live items and stops at the first younger row', async () => {
  const { store } = await freshStore();
  const seqs = await store.transaction(async (tx) => {
    const out: Record<string, number> = {};
    // 'skewed' was accepted after 'young' but stamped earlier (the clock stepped back)
    for (const [itemId, acceptedAt] of [['live', 5], ['old', 10], ['young', 50], ['skewed', 20]] as const) {
      out[itemId] = await tx.insertItem(item({ targetPubkey: 'T', itemId, acceptedAt }), 1);
    }
    return out;
  });
  for (const itemId of ['old', 'young', 'skewed']) await store.transaction((tx) => tx.deleteItem('T', seqs[itemId] as number));
  const left = async (): Promise<string[]> => store.transaction(async (tx) => {
    const ids = [];
    for (const itemId of ['live', 'old', 'young', 'skewed']) if (await tx.getDedup('sender', itemId, 'T') !== null) ids.push(itemId);
    return ids;
  });
  assert.equal(await sweepOnce(store, 40, 60, 100), 1);
  assert.deepEqual(await left(), ['live', 'young', 'skewed'], 'the live item keeps its row; the walk stops at the row accepted at 50');
  assert.equal(await sweepOnce(store, 60, 60, 1), 1, 'the limit holds');
  assert.equal(await sweepOnce(store, 60, 60, 100), 1);
  assert.deepEqual(await left(), ['live']);
  await store.close();
});

test('tombstones stamped while the clock ran ahead do not hold back the sweep of those accepted after it', async () => {
  const { store } = await freshStore();
  const seqs = await store.transaction(async (tx) => {
    const out: Record<string, number> = {};
    // 'ahead' was stamped by a clock a long way ahead; the clock was then set right and 'after' came
    for (const [itemId, acceptedAt] of [['ahead', 1_000_000], ['after', 30], ['young', 90]] as const) {
      out[itemId] = await tx.insertItem(item({ targetPubkey: 'T', itemId, acceptedAt }), 1);
    }
    return out;
  });
  for (const itemId of ['ahead', 'after', 'young']) await store.transaction((tx) => tx.deleteItem('T', seqs[itemId] as number));
  const left = async (): Promise<string[]> => store.transaction(async (tx) => {
    const ids = [];
    for (const itemId of ['ahead', 'after', 'young']) if (await tx.getDedup('sender', itemId, 'T') !== null) ids.push(itemId);
    return ids;
  });
  assert.equal(await sweepOnce(store, 40, 100, 100), 1);
  assert.deepEqual(await left(), ['ahead', 'young'], 'the row from the future is never swept early, and the walk stops at the row accepted at 90');
  assert.equal(await sweepOnce(store, 1_000_001, 2_000_000, 100), 2);
  assert.deepEqual(await left(), []);
  await store.close();
});

test('a dedup sweep step walks at most maxWalk rows and says where the next one goes on', async () => {
  const { store } = await freshStore();
  const seqs = await store.transaction(async (tx) => {
    const out: Record<string, number> = {};
    // three rows whose items are still queued at the head (retention was lowered), then two tombstones
    for (const [itemId, acceptedAt] of [['live-1', 1], ['live-2', 2], ['live-3', 3], ['gone-1', 4], ['gone-2', 5], ['young', 90]] as const) {
      out[itemId] = await tx.insertItem(item({ targetPubkey: 'T', itemId, acceptedAt }), 1);
    }
    return out;
  });
  for (const itemId of ['gone-1', 'gone-2', 'young']) await store.transaction((tx) => tx.deleteItem('T', seqs[itemId] as number));
  const step = (after: number, limit: number) => store.transaction((tx) => tx.sweepDedup(50, 100, { after, limit, maxWalk: 2 }));
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
  const left = await store.transaction(async (tx) => {
    const ids = [];
    for (const itemId of Object.keys(seqs)) if (await tx.getDedup('sender', itemId, 'T') !== null) ids.push(itemId);
    return ids;
  });
  assert.deepEqual(left, ['live-1', 'live-2', 'live-3', 'young']);
  for (const limits of [{ after: 0, limit: 0, maxWalk: 2 }, { after: 0, limit: 2, maxWalk: 0 }]) {
    await assert.rejects(store.transaction((tx) => tx.sweepDedup(50, 100, limits)), RangeError, 'a step that could not move on is refused');
  }
  await store.close();
});
