import assert from 'node:assert/strict';
import { sweepOnce } from './dedup-sweep.ts';
import { item, storeTest, type OpenStoreUnderTest } from './harness.ts';

export function describeItems(open: OpenStoreUnderTest): void {
  storeTest(open, 'seq = max(next_seq, now): a clock far behind still allocates above, a jump gives seq = now', async ({ store }) => {
    const seqs = await store.transaction(async (tx) => [
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 1_000_000),
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }), 5),
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'c' }), 2_000_000),
      await tx.items.insert(item({ targetPubkey: 'U', itemId: 'a' }), 5),
    ]);
    assert.deepEqual(seqs, [1_000_000, 1_000_001, 2_000_000, 5]);
    const heads = await store.transaction(async (tx) => [await tx.items.headSeq('T'), await tx.items.headSeq('U'), await tx.items.headSeq('nobody')]);
    assert.deepEqual(heads, [2_000_000, 5, 0]);
  });

  storeTest(open, 'seqs are never reused after everything was acked and the store reopened', async (under) => {
    const seqs = await under.store.transaction(async (tx) => [
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 10),
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }), 10),
    ]);
    assert.deepEqual(seqs, [10, 11]);
    assert.equal(await under.store.transaction((tx) => tx.items.ack('T', 11)), 2);
    const again = await under.reopen();
    const [next, head, acked] = await again.transaction(async (tx) => [
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'c' }), 0),
      await tx.items.headSeq('T'),
      await tx.items.ackedThrough('T'),
    ]);
    assert.deepEqual([next, head, acked], [12, 12, 11]);
  });

  storeTest(open, 'dedup rows are found by (sender, item id, target) and a second insert of the same key is refused', async ({ store }) => {
    const first = item({ targetPubkey: 'T', itemId: 'm1', senderPubkey: 'S', acceptedAt: 500 });
    const seq = await store.transaction((tx) => tx.items.insert(first, 42));
    const [row, otherTarget, otherSender] = await store.transaction(async (tx) => [
      await tx.items.dedup('S', 'm1', 'T'),
      await tx.items.dedup('S', 'm1', 'U'),
      await tx.items.dedup('R', 'm1', 'T'),
    ]);
    assert.deepEqual(row, { senderPubkey: 'S', itemId: 'm1', targetPubkey: 'T', wireHash: first.wireHash, seq, acceptedAt: 500 });
    assert.equal(otherTarget, null);
    assert.equal(otherSender, null);
    await assert.rejects(store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: 'm1', senderPubkey: 'S' }), 43)));
    const [page, head] = await store.transaction(async (tx) => [await tx.items.pull('T', 0, 10, 10_000), await tx.items.headSeq('T')] as const);
    assert.equal(page.items.length, 1);
    assert.equal(head, seq, 'the refused insert allocated nothing');
  });

  storeTest(open, 'pull pages by count in seq order, with the exact wire bytes and a correct `more`', async ({ store }) => {
    const wire = new Uint8Array([0, 255, 1, 254]);
    await store.transaction(async (tx) => {
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'binary', wire, kind: 'receipt' }), 1);
      for (const id of ['b', 'c', 'd', 'e']) await tx.items.insert(item({ targetPubkey: 'T', itemId: id }), 1);
      await tx.items.insert(item({ targetPubkey: 'OTHER', itemId: 'x' }), 1);
    });
    const first = await store.read((tx) => tx.items.pull('T', 0, 2, 1_000_000));
    assert.deepEqual(
      first.items.map((i) => [i.seq, i.itemId]),
      [
        [1, 'binary'],
        [2, 'b'],
      ],
    );
    assert.equal(first.more, true);
    const binary = first.items[0];
    assert.ok(binary !== undefined);
    assert.deepEqual([...binary.wire], [...wire]);
    assert.equal(binary.kind, 'receipt');
    assert.equal(binary.senderPubkey, item({ targetPubkey: 'T', itemId: 'binary' }).senderPubkey);
    const second = await store.transaction((tx) => tx.items.pull('T', 2, 2, 1_000_000));
    assert.deepEqual(
      second.items.map((i) => i.seq),
      [3, 4],
    );
    assert.equal(second.more, true);
    const last = await store.transaction((tx) => tx.items.pull('T', 4, 2, 1_000_000));
    assert.deepEqual(
      last.items.map((i) => i.seq),
      [5],
    );
    assert.equal(last.more, false);
    assert.deepEqual(await store.transaction((tx) => tx.items.pull('T', 5, 2, 1_000_000)), { items: [], more: false });
  });

  storeTest(open, 'pull stops before the item that would pass maxBytes, but returns an oversized item alone', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }, 10), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }, 10), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'c' }, 5), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'd' }, 100), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'e' }, 10), 1);
    });
    const exact = await store.transaction((tx) => tx.items.pull('T', 0, 10, 25));
    assert.deepEqual(
      exact.items.map((i) => i.itemId),
      ['a', 'b', 'c'],
      'exactly maxBytes fits',
    );
    assert.equal(exact.more, true);
    const tight = await store.transaction((tx) => tx.items.pull('T', 0, 10, 24));
    assert.deepEqual(
      tight.items.map((i) => i.itemId),
      ['a', 'b'],
    );
    const oversized = await store.transaction((tx) => tx.items.pull('T', 3, 10, 25));
    assert.deepEqual(
      oversized.items.map((i) => i.itemId),
      ['d'],
    );
    assert.equal(oversized.more, true);
    const tail = await store.transaction((tx) => tx.items.pull('T', 4, 10, 25));
    assert.deepEqual(
      tail.items.map((i) => i.itemId),
      ['e'],
    );
    assert.equal(tail.more, false);
  });

  storeTest(open, 'ack deletes seq ≤ through for that target only, and acked_through never goes down', async ({ store }) => {
    await store.transaction(async (tx) => {
      for (const id of ['a', 'b', 'c', 'd']) await tx.items.insert(item({ targetPubkey: 'T', itemId: id }), 1);
      await tx.items.insert(item({ targetPubkey: 'U', itemId: 'a' }), 1);
    });
    assert.equal(await store.transaction((tx) => tx.items.ack('T', 0)), 0);
    assert.equal(await store.transaction((tx) => tx.items.ack('T', 2)), 2);
    assert.equal(await store.transaction((tx) => tx.items.ackedThrough('T')), 2);
    assert.equal(await store.transaction((tx) => tx.items.ack('T', 1)), 0);
    assert.equal(await store.transaction((tx) => tx.items.ackedThrough('T')), 2, 'a lower ack does not lower acked_through');
    const page = await store.transaction((tx) => tx.items.pull('T', 0, 10, 10_000));
    assert.deepEqual(
      page.items.map((i) => i.seq),
      [3, 4],
    );
    assert.equal(await store.transaction((tx) => tx.items.ack('T', 4)), 2);
    assert.equal((await store.transaction((tx) => tx.items.pull('U', 0, 10, 10_000))).items.length, 1, 'other targets untouched');
    assert.equal(await store.transaction((tx) => tx.items.ackedThrough('nobody')), 0);
  });

  storeTest(open, 'expiry: oldest first up to a limit, delete keeps the dedup tombstone, the sweep honours the horizon', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'late', acceptedAt: 30, expiresAt: 300 }), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'early', acceptedAt: 10, expiresAt: 100 }), 1);
      await tx.items.insert(item({ targetPubkey: 'U', itemId: 'middle', acceptedAt: 20, expiresAt: 200 }), 1);
    });
    const due = await store.transaction((tx) => tx.items.expired(200, 10));
    assert.deepEqual(
      due.map((i) => i.itemId),
      ['early', 'middle'],
    );
    assert.equal('wire' in (due[0] ?? {}), false, 'headers carry no bytes');
    assert.deepEqual(
      (await store.transaction((tx) => tx.items.expired(200, 1))).map((i) => i.itemId),
      ['early'],
    );
    assert.deepEqual(await store.transaction((tx) => tx.items.expired(99, 10)), []);

    for (const header of due) await store.transaction((tx) => tx.items.delete(header.targetPubkey, header.seq));
    const [tombstone, pageT, pageU] = await store.transaction(
      async (tx) => [await tx.items.dedup('sender', 'early', 'T'), await tx.items.pull('T', 0, 10, 10_000), await tx.items.pull('U', 0, 10, 10_000)] as const,
    );
    assert.ok(tombstone !== null, 'the dedup row stays as a tombstone');
    assert.deepEqual(
      pageT.items.map((i) => i.itemId),
      ['late'],
    );
    assert.deepEqual(pageU.items, []);

    assert.equal(await sweepOnce(store, 10, 1_000, 100), 0, 'accepted at 10 is not before 10');
    assert.equal(await sweepOnce(store, 1_000, 1_000, 1), 1, 'the limit holds');
    assert.equal(await sweepOnce(store, 1_000, 1_000, 100), 1);
    const [early, middle, late] = await store.transaction(async (tx) => [
      await tx.items.dedup('sender', 'early', 'T'),
      await tx.items.dedup('sender', 'middle', 'U'),
      await tx.items.dedup('sender', 'late', 'T'),
    ]);
    assert.equal(early, null);
    assert.equal(middle, null);
    assert.ok(late !== null, 'a dedup row whose item still exists is never swept');
  });
}
