import assert from 'node:assert/strict';
import { item, senderList, storeTest, type OpenStoreUnderTest } from './harness.ts';

/** The primitives the rules (store/rules/) are written over, each on its own. */
export function describePrimitives(open: OpenStoreUnderTest): void {
  storeTest(open, 'dedupWalk reads rows in acceptance order from a cursor, saying which items still exist; deleteDedupRows spares those', async ({ store }) => {
    const seqs = await store.transaction(async (tx) => {
      const out: number[] = [];
      // acceptance stamps out of order: the walk follows the order rows were inserted, not the stamps
      for (const [itemId, acceptedAt] of [
        ['a', 30],
        ['b', 10],
        ['c', 20],
      ] as const)
        out.push(await tx.items.insert(item({ targetPubkey: 'T', itemId, acceptedAt }), 1));
      return out;
    });
    await store.transaction((tx) => tx.items.delete('T', seqs[1] ?? 0));
    const all = await store.read((reader) => reader.items.dedupWalk(0, 10));
    assert.deepEqual(
      all.map(({ acceptedAt, live }) => [acceptedAt, live]),
      [
        [30, true],
        [10, false],
        [20, true],
      ],
    );
    assert.ok(
      all.every((row, n) => n === 0 || row.id > (all[n - 1]?.id ?? 0)),
      'ids grow in walk order',
    );
    const [first, second, third] = all.map((row) => row.id);
    assert.deepEqual(
      (await store.read((reader) => reader.items.dedupWalk(first ?? 0, 1))).map((row) => row.id),
      [second],
    );
    assert.deepEqual(await store.read((reader) => reader.items.dedupWalk(third ?? 0, 10)), []);
    assert.equal(await store.transaction((tx) => tx.items.deleteDedupRows([first ?? 0, second ?? 0, third ?? 0])), 1, 'only the row whose item is gone');
    assert.equal(await store.transaction((tx) => tx.items.deleteDedupRows([])), 0);
    assert.deepEqual(
      (await store.read((reader) => reader.items.dedupWalk(0, 10))).map((row) => row.acceptedAt),
      [30, 20],
    );
  });

  storeTest(open, 'allocateSeqs hands out consecutive seqs from max(next_seq, now), never the same twice', async ({ store }) => {
    const [a, b, c] = await store.transaction(async (tx) => [
      await tx.items.allocateSeqs('T', 3, 100),
      await tx.items.allocateSeqs('T', 2, 50),
      await tx.items.allocateSeqs('T', 1, 1_000),
    ]);
    assert.deepEqual([a, b, c], [100, 103, 1_000]);
    assert.equal(await store.read((reader) => reader.items.headSeq('T')), 1_000);
    assert.equal(await store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: 'x' }), 0)), 1_001);
  });

  storeTest(open, 'moveItems moves items and their usage, not their dedup rows; a missing item is refused and nothing moves', async ({ store }) => {
    const [seq, stays] = await store.transaction(async (tx) => [
      await tx.items.insert(item({ targetPubkey: 'OLD', itemId: 'm', senderPubkey: 'S', account: 'acct' }, 12), 5),
      await tx.items.insert(item({ targetPubkey: 'OLD', itemId: 'n', senderPubkey: 'R' }, 3), 5),
    ]);
    await store.transaction(async (tx) => {
      const to = await tx.items.allocateSeqs('NEW', 1, 7);
      await tx.items.moveItems('OLD', 'NEW', [{ from: seq, to }]);
    });
    const state = await store.read(async (reader) => ({
      newPage: (await reader.items.pull('NEW', 0, 10, 10_000)).items.map((i) => [i.seq, i.itemId]),
      oldPage: (await reader.items.pull('OLD', 0, 10, 10_000)).items,
      queues: [await reader.usage.queue('OLD'), await reader.usage.queue('NEW')],
      shares: [await reader.usage.sender('S', 'OLD'), await reader.usage.sender('S', 'NEW')],
      account: await reader.usage.account('acct'),
      dedup: await reader.items.dedup('S', 'm', 'OLD'),
    }));
    assert.deepEqual(state.newPage, [[7, 'm']]);
    assert.deepEqual(
      state.oldPage.map((i) => i.seq),
      [stays],
    );
    assert.deepEqual(state.queues, [
      { items: 1, bytes: 3 },
      { items: 1, bytes: 12 },
    ]);
    assert.deepEqual(state.shares, [
      { items: 0, bytes: 0 },
      { items: 1, bytes: 12 },
    ]);
    assert.deepEqual(state.account, { items: 1, bytes: 12 });
    assert.equal(state.dedup?.seq, seq, 'the dedup row stays until repointed');
    await assert.rejects(
      store.transaction((tx) =>
        tx.items.moveItems('OLD', 'NEW', [
          { from: stays, to: 98 },
          { from: seq, to: 99 },
        ]),
      ),
    );
    assert.deepEqual(
      await store.read(async (reader) => [await reader.usage.queue('OLD'), (await reader.items.pull('NEW', 0, 10, 10_000)).items.length]),
      [{ items: 1, bytes: 3 }, 1],
      'the refused move left everything where it was',
    );
  });

  storeTest(
    open,
    'repointDedup moves rows that do not collide (one with its new seq, or all left); deleteTombstonesOf drops what stayed',
    async ({ store }) => {
      await store.transaction(async (tx) => {
        for (const itemId of ['one', 'both', 'tomb']) await tx.items.insert(item({ targetPubkey: 'OLD', itemId }), 1);
        await tx.items.insert(item({ targetPubkey: 'NEW', itemId: 'both' }), 50);
        await tx.items.ack('OLD', 3); // every OLD item gone: its rows are tombstones
      });
      const moved = await store.transaction(async (tx) => [
        await tx.items.repointDedup('OLD', 'NEW', [
          { senderPubkey: 'sender', itemId: 'one', seq: 70 },
          { senderPubkey: 'sender', itemId: 'both', seq: 71 },
        ]),
        await tx.items.repointDedup('OLD', 'NEW', []),
        await tx.items.repointDedup('OLD', 'NEW'),
      ]);
      assert.deepEqual(moved, [1, 0, 1], 'the colliding row stays behind both times');
      const rows = await store.read(async (reader) => ({
        one: (await reader.items.dedup('sender', 'one', 'NEW'))?.seq,
        both: (await reader.items.dedup('sender', 'both', 'NEW'))?.seq,
        tomb: (await reader.items.dedup('sender', 'tomb', 'NEW'))?.seq,
        leftBehind: (await reader.items.dedup('sender', 'both', 'OLD'))?.seq,
      }));
      assert.deepEqual(rows, { one: 70, both: 50, tomb: 3, leftBehind: 2 });
      assert.equal(await store.transaction((tx) => tx.items.deleteTombstonesOf('NEW')), 2, "NEW's live item keeps its row");
      assert.equal(await store.transaction((tx) => tx.items.deleteTombstonesOf('OLD')), 1);
      assert.equal(await store.read((reader) => reader.items.dedup('sender', 'both', 'NEW').then((row) => row?.seq)), 50);
    },
  );

  storeTest(open, 'queueRefs lists a queue in seq order; queueTotals counts every queue and finds the item nearest expiry', async ({ store }) => {
    assert.deepEqual(await store.read((reader) => reader.items.queueTotals()), { items: 0, oldestAcceptedAt: null });
    await store.transaction(async (tx) => {
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b', senderPubkey: 'S2', acceptedAt: 20, expiresAt: 500 }), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a', senderPubkey: 'S1', acceptedAt: 30, expiresAt: 400 }), 1);
      await tx.items.insert(item({ targetPubkey: 'U', itemId: 'c', acceptedAt: 10, expiresAt: 600 }), 1);
    });
    assert.deepEqual(await store.read((reader) => reader.items.queueRefs('T')), [
      { seq: 1, itemId: 'b', senderPubkey: 'S2' },
      { seq: 2, itemId: 'a', senderPubkey: 'S1' },
    ]);
    assert.deepEqual(await store.read((reader) => reader.items.queueRefs('nobody')), []);
    assert.deepEqual(await store.read((reader) => reader.items.queueTotals()), { items: 3, oldestAcceptedAt: 30 });
  });

  storeTest(open, 'senderListsNaming finds the lists naming a key; moveSenderList moves a list unless the target has its own', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.hostRecords.putSenderList(senderList('P', ['K', 'S']));
      await tx.hostRecords.putSenderList(senderList('Q', ['S']));
      await tx.hostRecords.putSenderList(senderList('R', ['K']));
      await tx.hostRecords.putSenderList(senderList('OLD', ['S']));
      await tx.hostRecords.putSenderList(senderList('MINE', ['X']));
    });
    assert.deepEqual((await store.read((reader) => reader.hostRecords.senderListsNaming('K'))).map((list) => list.targetPubkey).sort(), ['P', 'R']);
    assert.deepEqual(await store.read((reader) => reader.hostRecords.senderListsNaming('nobody')), []);
    await store.transaction(async (tx) => {
      await tx.hostRecords.moveSenderList('OLD', 'NEW');
      await tx.hostRecords.moveSenderList('Q', 'MINE');
    });
    const lists = await store.read(async (reader) =>
      Promise.all(['OLD', 'NEW', 'Q', 'MINE'].map(async (key) => (await reader.hostRecords.senderList(key))?.senders ?? null)),
    );
    assert.deepEqual(lists, [null, ['S'], ['S'], ['X']]);
  });
}
