import assert from 'node:assert/strict';
import type { EncAd } from '../../../../src/relay/store/relay-store.ts';
import { enrolment, storeTest, type OpenStoreUnderTest } from './harness.ts';

export function describeRecords(open: OpenStoreUnderTest): void {
  storeTest(open, 'enrolments round-trip and names match case-insensitively among live keys only', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.enrolments.put(enrolment('K1', { hostName: 'MacBook', account: 'a', org: 'o', enrolledAt: 3 }));
      await tx.enrolments.put(enrolment('K2', { enrolledAt: 2 }));
      await tx.enrolments.put(enrolment('K3', { revokedAt: 4 }));
      await tx.enrolments.put(enrolment('K4', { hostName: 'other' }));
    });
    const state = await store.read(async (tx) => ({
      k1: await tx.enrolments.get('K1'),
      byName: (await tx.enrolments.liveByName('MACBOOK', 10)).map((e) => e.hostPubkey),
      limited: (await tx.enrolments.liveByName('macbook', 1)).map((e) => e.hostPubkey),
      missing: await tx.enrolments.get('nobody'),
    }));
    assert.deepEqual(state.k1, enrolment('K1', { hostName: 'MacBook', account: 'a', org: 'o', enrolledAt: 3 }));
    assert.deepEqual(state.byName, ['K2', 'K1'], 'oldest enrolment first, the revoked K3 left out');
    assert.deepEqual(state.limited, ['K2']);
    assert.equal(state.missing, null);
  });

  storeTest(open, 'a name is taken only by another live key of the same account', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.enrolments.put(enrolment('K1', { account: 'a' }));
      await tx.enrolments.put(enrolment('K2', { account: 'b', revokedAt: 9 }));
    });
    const taken = await store.transaction(async (tx) => [
      await tx.enrolments.nameTakenInAccount('a', 'MACBOOK', 'K9'),
      await tx.enrolments.nameTakenInAccount('a', 'macbook', 'K1'),
      await tx.enrolments.nameTakenInAccount('b', 'macbook', 'K9'),
      await tx.enrolments.nameTakenInAccount('c', 'macbook', 'K9'),
    ]);
    assert.deepEqual(taken, [true, false, false, false]);
    // the store backs the rule (names unique among live keys of an account) …
    await assert.rejects(store.transaction((tx) => tx.enrolments.put(enrolment('K3', { account: 'a', hostName: 'MacBook' }))));
    // … while without an account, and across accounts, a name is shared freely
    await store.transaction(async (tx) => {
      await tx.enrolments.put(enrolment('K4'));
      await tx.enrolments.put(enrolment('K5'));
      await tx.enrolments.put(enrolment('K6', { account: 'b' }));
    });
    assert.equal(await store.transaction((tx) => tx.enrolments.countLive()), 4);
  });

  storeTest(open, 'enc-key ads (v1 and v2) and sender lists round-trip and are replaced by key', async ({ store }) => {
    const v2: EncAd = { hostPubkey: 'H', encPub: 'enc-1', version: 2, record: '{"v":2}', sig: 's1', iat: 10, exp: 20, at: 11, v1Sig: 'v1s' };
    const v1: EncAd = { hostPubkey: 'G', encPub: 'enc-g', version: 1, record: null, sig: 's2', iat: 5, exp: null, at: 5, v1Sig: null };
    await store.transaction(async (tx) => {
      await tx.hostRecords.putEncAd(v2);
      await tx.hostRecords.putEncAd(v1);
      await tx.hostRecords.putSenderList({ targetPubkey: 'H', senders: ['A', 'B'], iat: 1, record: '{"senders":["A","B"]}', sig: 'x' });
    });
    assert.deepEqual(await store.transaction((tx) => tx.hostRecords.encAd('H')), v2);
    assert.deepEqual(await store.transaction((tx) => tx.hostRecords.encAd('G')), v1);
    assert.equal(await store.transaction((tx) => tx.hostRecords.encAd('nobody')), null);
    const newer: EncAd = { ...v2, encPub: 'enc-2', iat: 30, exp: 40, at: 31, v1Sig: null };
    const list = { targetPubkey: 'H', senders: ['C'], iat: 2, record: '{"senders":["C"]}', sig: 'y' };
    await store.transaction(async (tx) => {
      await tx.hostRecords.putEncAd(newer);
      await tx.hostRecords.putSenderList(list);
    });
    assert.deepEqual(await store.transaction((tx) => tx.hostRecords.encAd('H')), newer);
    assert.deepEqual(await store.transaction((tx) => tx.hostRecords.senderList('H')), list);
    assert.equal(await store.transaction((tx) => tx.hostRecords.senderList('nobody')), null);
  });
}
