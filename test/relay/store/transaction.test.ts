import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Enrolment, RelayTx } from '../../../src/relay/store/relay-store.ts';
import { MAX_QUEUED_TRANSACTIONS, StoreClosedError, StoreOverloadedError, TransactionMisuseError } from '../../../src/relay/store/sqlite/index.ts';
import { freshStore, item } from './store-fixtures.ts';

const ENROLMENT: Enrolment = {
  hostPubkey: 'H', hostName: 'h', ownerFp: '', account: 'acct', org: null, authorizedBy: 'host-key', enrolledAt: 1, revokedAt: null,
};

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

test('a transaction that throws leaves nothing behind and rejects with the same error', async () => {
  const { store } = await freshStore({ newEpoch: () => 'e1' });
  const boom = new Error('boom');
  await assert.rejects(store.transaction(async (tx) => {
    await tx.putEnrolment(ENROLMENT);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'a', account: 'acct' }), 5);
    await tx.setEpoch('e2');
    await tx.putSenderList({ targetPubkey: 'T', senders: ['S'], iat: 1, record: '{}', sig: 's' });
    throw boom;
  }), (error) => error === boom);
  const state = await store.transaction(async (tx) => ({
    enrolment: await tx.getEnrolment('H'), live: await tx.countLiveEnrolments(), head: await tx.headSeq('T'),
    page: await tx.pull('T', 0, 10, 1_000), usage: await tx.accountUsage('acct'), dedup: await tx.getDedup('sender', 'a', 'T'),
    epoch: (await tx.meta()).epoch, list: await tx.getSenderList('T'),
  }));
  assert.deepEqual(state, {
    enrolment: null, live: 0, head: 0, page: { items: [], more: false }, usage: { items: 0, bytes: 0 }, dedup: null, epoch: 'e1', list: null,
  });
  await store.close();
});

test('a failed transaction does not disturb the next one in the queue', async () => {
  const { store } = await freshStore();
  const failing = store.transaction(async (tx) => {
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'a' }), 5);
    throw new Error('no');
  });
  const next = store.transaction((tx) => tx.insertItem(item({ targetPubkey: 'T', itemId: 'b' }), 5));
  await assert.rejects(failing, /no/);
  assert.equal(await next, 5, 'the rolled-back seq is allocated again: it was never handed out');
  await store.close();
});

test('the RelayTx refuses use after its transaction ended', async () => {
  const { store } = await freshStore();
  let escaped: RelayTx | undefined;
  await store.transaction(async (tx) => { escaped = tx; });
  assert.ok(escaped !== undefined);
  await assert.rejects(escaped.getEnrolment('H'), TransactionMisuseError);
  await assert.rejects(escaped.insertItem(item({ targetPubkey: 'T', itemId: 'a' }), 1), TransactionMisuseError);
  let failed: RelayTx | undefined;
  await assert.rejects(store.transaction(async (tx) => { failed = tx; throw new Error('x'); }));
  await assert.rejects(failed?.putEnrolment(ENROLMENT) ?? Promise.resolve(), TransactionMisuseError);
  assert.equal(await store.transaction((tx) => tx.headSeq('T')), 0);
  await store.close();
});

test('concurrent transactions run one at a time, in the order they were asked', async () => {
  const { store } = await freshStore();
  const events: string[] = [];
  const gate = deferred();
  const first = store.transaction(async (tx) => {
    events.push('1 start');
    await gate.promise;
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'a' }), 1);
    events.push('1 end');
  });
  const second = store.transaction(async (tx) => {
    events.push('2 start');
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'b' }), 1);
    events.push('2 end');
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(events, ['1 start'], 'the second waits while the first is open');
  gate.resolve();
  await Promise.all([first, second]);
  assert.deepEqual(events, ['1 start', '1 end', '2 start', '2 end']);

  // many at once: each reads the head and inserts; serial execution makes every seq distinct and consecutive
  const seqs = await Promise.all(Array.from({ length: 50 }, (_, n) => store.transaction(async (tx) => {
    const head = await tx.headSeq('U');
    const seq = await tx.insertItem(item({ targetPubkey: 'U', itemId: `m${n}` }), 1);
    assert.equal(seq, head + 1);
    return seq;
  })));
  assert.deepEqual(seqs, Array.from({ length: 50 }, (_, n) => n + 1));
  await store.close();
});

test('a read-only transaction cannot write, and writing works again afterwards', async () => {
  const { store } = await freshStore();
  await assert.rejects(store.transaction((tx) => tx.putEnrolment(ENROLMENT), { readOnly: true }), /readonly/);
  await store.transaction((tx) => tx.putEnrolment(ENROLMENT));
  assert.equal((await store.transaction((tx) => tx.getEnrolment('H'), { readOnly: true }))?.hostName, 'h');
  await store.close();
});

test('a transaction started inside another fails instead of waiting for itself', async () => {
  const { store } = await freshStore();
  const result = await store.transaction(async (tx) => {
    await assert.rejects(store.transaction((inner) => inner.headSeq('T')), TransactionMisuseError);
    return tx.insertItem(item({ targetPubkey: 'T', itemId: 'a' }), 3);
  });
  assert.equal(result, 3);
  await store.close();
});

test('close waits for queued transactions, then refuses new ones', async () => {
  const { store, dir } = await freshStore();
  const queued = [1, 2, 3].map((n) => store.transaction((tx) => tx.insertItem(item({ targetPubkey: 'T', itemId: `c${n}` }), 1)));
  const closing = store.close();
  await assert.rejects(store.transaction((tx) => tx.headSeq('T')), StoreClosedError);
  assert.deepEqual(await Promise.all(queued), [1, 2, 3]);
  await closing;
  await store.close(); // twice is fine
  const { store: again } = await freshStore({ dir });
  assert.equal(await again.transaction((tx) => tx.headSeq('T')), 3);
  await again.close();
});

test(`more than MAX_QUEUED_TRANSACTIONS waiting are refused`, async () => {
  const { store } = await freshStore();
  const gate = deferred();
  const running = store.transaction(() => gate.promise);
  const waiting = Array.from({ length: MAX_QUEUED_TRANSACTIONS }, () => store.transaction(async () => 1));
  await assert.rejects(store.transaction(async () => 1), StoreOverloadedError);
  gate.resolve();
  await running;
  assert.equal((await Promise.all(waiting)).length, MAX_QUEUED_TRANSACTIONS);
  await store.close();
});
