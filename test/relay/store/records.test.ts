import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EncAd, Enrolment } from '../../../src/relay/store/relay-store.ts';
import { freshStore } from './store-fixtures.ts';

function enrolment(hostPubkey: string, fields: Partial<Enrolment> = {}): Enrolment {
  return { hostPubkey, hostName: 'macbook', ownerFp: 'fp', account: null, org: null, authorizedBy: 'host-key', enrolledAt: 1, revokedAt: null, ...fields };
}

test('enrolments round-trip and names match case-insensitively among live keys only', async () => {
  const { store } = await freshStore();
  await store.transaction(async (tx) => {
    await tx.putEnrolment(enrolment('K1', { hostName: 'MacBook', account: 'a', org: 'o', enrolledAt: 3 }));
    await tx.putEnrolment(enrolment('K2', { enrolledAt: 2 }));
    await tx.putEnrolment(enrolment('K3', { revokedAt: 4 }));
    await tx.putEnrolment(enrolment('K4', { hostName: 'other' }));
  });
  const state = await store.transaction(async (tx) => ({
    k1: await tx.getEnrolment('K1'),
    byName: (await tx.liveEnrolmentsByName('MACBOOK', 10)).map((e) => e.hostPubkey),
    limited: (await tx.liveEnrolmentsByName('macbook', 1)).map((e) => e.hostPubkey),
    missing: await tx.getEnrolment('nobody'),
  }), { readOnly: true });
  assert.deepEqual(state.k1, enrolment('K1', { hostName: 'MacBook', account: 'a', org: 'o', enrolledAt: 3 }));
  assert.deepEqual(state.byName, ['K2', 'K1'], 'oldest enrolment first, the revoked K3 left out');
  assert.deepEqual(state.limited, ['K2']);
  assert.equal(state.missing, null);
  await store.close();
});

test('a name is taken only by another live key of the same account', async () => {
  const { store } = await freshStore();
  await store.transaction(async (tx) => {
    await tx.putEnrolment(enrolment('K1', { account: 'a' }));
    await tx.putEnrolment(enrolment('K2', { account: 'b', revokedAt: 9 }));
  });
  const taken = await store.transaction(async (tx) => [
    await tx.nameTakenInAccount('a', 'MACBOOK', 'K9'),
    await tx.nameTakenInAccount('a', 'macbook', 'K1'),
    await tx.nameTakenInAccount('b', 'macbook', 'K9'),
    await tx.nameTakenInAccount('c', 'macbook', 'K9'),
  ]);
  assert.deepEqual(taken, [true, false, false, false]);
  // the store backs the rule with a unique index over live rows of an account …
  await assert.rejects(store.transaction((tx) => tx.putEnrolment(enrolment('K3', { account: 'a', hostName: 'MacBook' }))), /UNIQUE/);
  // … while without an account, and across accounts, a name is shared freely
  await store.transaction(async (tx) => {
    await tx.putEnrolment(enrolment('K4'));
    await tx.putEnrolment(enrolment('K5'));
    await tx.putEnrolment(enrolment('K6', { account: 'b' }));
  });
  assert.equal(await store.transaction((tx) => tx.countLiveEnrolments()), 4);
  await store.close();
});

test('enc-key ads (v1 and v2) and sender lists round-trip and are replaced by key', async () => {
  const { store } = await freshStore();
  const v2: EncAd = { hostPubkey: 'H', encPub: 'enc-1', version: 2, record: '{"v":2}', sig: 's1', iat: 10, exp: 20, at: 11 };
  const v1: EncAd = { hostPubkey: 'G', encPub: 'enc-g', version: 1, record: null, sig: 's2', iat: 5, exp: null, at: 5 };
  await store.transaction(async (tx) => {
    await tx.putEncAd(v2);
    await tx.putEncAd(v1);
    await tx.putSenderList({ targetPubkey: 'H', senders: ['A', 'B'], iat: 1, record: '{"senders":["A","B"]}', sig: 'x' });
  });
  assert.deepEqual(await store.transaction((tx) => tx.getEncAd('H')), v2);
  assert.deepEqual(await store.transaction((tx) => tx.getEncAd('G')), v1);
  assert.equal(await store.transaction((tx) => tx.getEncAd('nobody')), null);
  const newer: EncAd = { ...v2, encPub: 'enc-2', iat: 30, exp: 40, at: 31 };
  const list = { targetPubkey: 'H', senders: ['C'], iat: 2, record: '{"senders":["C"]}', sig: 'y' };
  await store.transaction(async (tx) => {
    await tx.putEncAd(newer);
    await tx.putSenderList(list);
  });
  assert.deepEqual(await store.transaction((tx) => tx.getEncAd('H')), newer);
  assert.deepEqual(await store.transaction((tx) => tx.getSenderList('H')), list);
  assert.equal(await store.transaction((tx) => tx.getSenderList('nobody')), null);
  await store.close();
});
