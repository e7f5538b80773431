import assert from 'node:assert/strict';
import type { Enrolment } from '../../../../src/relay/store/relay-store.ts';
import { rotateKey } from '../../../../src/relay/store/rules/rotation.ts';
import { item, senderList as list, storeTest, type OpenStoreUnderTest } from './harness.ts';

const OLD_ENROLMENT: Enrolment = {
  hostPubkey: 'OLD',
  hostName: 'Laptop',
  ownerFp: 'owner',
  account: 'acct',
  org: 'org',
  authorizedBy: 'account-token',
  enrolledAt: 1,
  revokedAt: null,
};

/** Rotation (store/rules/rotation.ts) over this backend's primitives. */

export function describeRotation(open: OpenStoreUnderTest): void {
  storeTest(open, "rotation appends the old queue after the new key's items in order, with dedup rows, usage and tombstones", async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.enrolments.put(OLD_ENROLMENT);
      for (const id of ['a', 'b', 'c']) await tx.items.insert(item({ targetPubkey: 'OLD', itemId: id, senderPubkey: 'S1', account: 'acct' }, 10), 100);
      await tx.items.insert(item({ targetPubkey: 'NEW', itemId: 'x', senderPubkey: 'S2' }, 10), 50);
      await tx.items.ack('OLD', 100); // 'a' delivered: its dedup row is a tombstone
    });
    const result = await store.transaction((tx) => rotateKey(tx, 'OLD', 'NEW', 60));
    assert.deepEqual(result, { moved: 2 });

    const state = await store.transaction(async (tx) => ({
      page: await tx.items.pull('NEW', 0, 10, 10_000),
      oldPage: await tx.items.pull('OLD', 0, 10, 10_000),
      head: await tx.items.headSeq('NEW'),
      dedupB: await tx.items.dedup('S1', 'b', 'NEW'),
      dedupC: await tx.items.dedup('S1', 'c', 'NEW'),
      oldDedupB: await tx.items.dedup('S1', 'b', 'OLD'),
      tombstone: await tx.items.dedup('S1', 'a', 'NEW'),
      oldQueue: await tx.usage.queue('OLD'),
      newQueue: await tx.usage.queue('NEW'),
      senderNew: await tx.usage.sender('S1', 'NEW'),
      senderOld: await tx.usage.sender('S1', 'OLD'),
      account: await tx.usage.account('acct'),
    }));
    // new seqs from max(next_seq = 51, now = 60)
    assert.deepEqual(
      state.page.items.map((i) => [i.seq, i.itemId]),
      [
        [50, 'x'],
        [60, 'b'],
        [61, 'c'],
      ],
    );
    assert.deepEqual(state.oldPage.items, []);
    assert.equal(state.head, 61);
    assert.equal(state.dedupB?.seq, 60);
    assert.equal(state.dedupC?.seq, 61);
    assert.equal(state.oldDedupB, null);
    assert.ok(state.tombstone !== null, 'a tombstone moves too, so a retry to the new key stays a duplicate');
    assert.deepEqual(state.oldQueue, { items: 0, bytes: 0 });
    assert.deepEqual(state.newQueue, { items: 3, bytes: 30 });
    assert.deepEqual(state.senderNew, { items: 2, bytes: 20 });
    assert.deepEqual(state.senderOld, { items: 0, bytes: 0 });
    assert.deepEqual(state.account, { items: 2, bytes: 20 }, 'the account keeps being charged for its items');

    // a later clock behind the moved seqs still allocates above them
    assert.equal(await store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'NEW', itemId: 'y' }), 0)), 62);
  });

  storeTest(open, 'rotation gives the new key the old name, account and authority, revokes the old key, and moves and swaps allowlists', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.enrolments.put(OLD_ENROLMENT);
      await tx.hostRecords.putSenderList(list('OLD', ['S1', 'S2']));
      await tx.hostRecords.putSenderList(list('P', ['OLD', 'S1']));
      await tx.hostRecords.putSenderList(list('Q', ['OLD', 'NEW', 'S3']));
      await tx.hostRecords.putSenderList(list('R', ['S1']));
    });
    await store.transaction((tx) => rotateKey(tx, 'OLD', 'NEW', 70));
    const state = await store.transaction(async (tx) => ({
      old: await tx.enrolments.get('OLD'),
      new: await tx.enrolments.get('NEW'),
      byName: await tx.enrolments.liveByName('laptop', 10),
      taken: await tx.enrolments.nameTakenInAccount('acct', 'LAPTOP', 'someone-else'),
      lists: await Promise.all(['OLD', 'NEW', 'P', 'Q', 'R'].map((key) => tx.hostRecords.senderList(key))),
    }));
    assert.deepEqual(state.old, { ...OLD_ENROLMENT, revokedAt: 70 });
    assert.deepEqual(state.new, { ...OLD_ENROLMENT, hostPubkey: 'NEW', enrolledAt: 70, revokedAt: null });
    assert.deepEqual(
      state.byName.map((e) => e.hostPubkey),
      ['NEW'],
    );
    assert.equal(state.taken, true);
    const [oldList, newList, p, q, r] = state.lists;
    assert.equal(oldList, null);
    assert.deepEqual(newList, { ...list('OLD', ['S1', 'S2']), targetPubkey: 'NEW' }, 'the record stays the signed text');
    assert.deepEqual(p?.senders, ['NEW', 'S1']);
    assert.deepEqual(q?.senders, ['NEW', 'S3'], 'no duplicate when the list already named the new key');
    assert.deepEqual(r?.senders, ['S1']);
  });

  storeTest(
    open,
    "a new key that is already enrolled takes the old name and account, keeps its own list; colliding dedup rows keep the new key's",
    async ({ store }) => {
      const own: Enrolment = { ...OLD_ENROLMENT, hostPubkey: 'NEW', hostName: 'laptop-2', account: null, org: null, authorizedBy: 'host-key', enrolledAt: 5 };
      await store.transaction(async (tx) => {
        await tx.enrolments.put(OLD_ENROLMENT);
        await tx.enrolments.put(own);
        await tx.hostRecords.putSenderList(list('OLD', ['S1']));
        await tx.hostRecords.putSenderList(list('NEW', ['S9']));
        await tx.items.insert(item({ targetPubkey: 'NEW', itemId: 'same', senderPubkey: 'S1' }), 10);
        await tx.items.insert(item({ targetPubkey: 'OLD', itemId: 'same', senderPubkey: 'S1' }), 10);
      });
      assert.deepEqual(await store.transaction((tx) => rotateKey(tx, 'OLD', 'NEW', 20)), { moved: 1 });
      const state = await store.transaction(async (tx) => ({
        new: await tx.enrolments.get('NEW'),
        old: await tx.enrolments.get('OLD'),
        count: await tx.enrolments.countLive(),
        newList: await tx.hostRecords.senderList('NEW'),
        dedup: await tx.items.dedup('S1', 'same', 'NEW'),
        page: await tx.items.pull('NEW', 0, 10, 10_000),
      }));
      assert.deepEqual(state.new, { ...OLD_ENROLMENT, hostPubkey: 'NEW', enrolledAt: own.enrolledAt, revokedAt: null }, 'name and account move (design §2)');
      assert.equal(state.old?.revokedAt, 20);
      assert.equal(state.count, 1);
      assert.deepEqual(state.newList?.senders, ['S9']);
      assert.equal(state.dedup?.seq, 10, "the new key's own dedup row wins");
      assert.deepEqual(
        state.page.items.map((i) => i.seq),
        [10, 20],
      );
    },
  );
}
