import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreOverloadedError, TransactionMisuseError } from '../../../src/relay/store/errors.ts';
import { MAX_QUEUED_TRANSACTIONS } from '../../../src/relay/store/sqlite/index.ts';
import { freshStore, item } from './store-fixtures.ts';

// How the SQLite store runs transactions: one at a time from one queue. What every backend promises is in behaviour/.

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

test('concurrent transactions run one at a time, in the order they were asked', async () => {
  const { store } = await freshStore();
  const events: string[] = [];
  const gate = deferred();
  const first = store.transaction(async (tx) => {
    events.push('1 start');
    await gate.promise;
    await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 1);
    events.push('1 end');
  });
  const second = store.transaction(async (tx) => {
    events.push('2 start');
    await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }), 1);
    events.push('2 end');
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(events, ['1 start'], 'the second waits while the first is open');
  gate.resolve();
  await Promise.all([first, second]);
  assert.deepEqual(events, ['1 start', '1 end', '2 start', '2 end']);

  // many at once: each reads the head and inserts; serial execution means no other insert comes between
  const seqs = await Promise.all(
    Array.from({ length: 50 }, (_, n) =>
      store.transaction(async (tx) => {
        const head = await tx.items.headSeq('U');
        const seq = await tx.items.insert(item({ targetPubkey: 'U', itemId: `m${n}` }), 1);
        assert.equal(seq, head + 1);
        return seq;
      }),
    ),
  );
  assert.deepEqual(
    seqs,
    Array.from({ length: 50 }, (_, n) => n + 1),
  );
  await store.close();
});

test('a transaction or read started inside a transaction fails instead of waiting for itself', async () => {
  const { store } = await freshStore();
  const result = await store.transaction(async (tx) => {
    await assert.rejects(
      store.transaction((inner) => inner.items.headSeq('T')),
      TransactionMisuseError,
    );
    await assert.rejects(
      store.read((inner) => inner.items.headSeq('T')),
      TransactionMisuseError,
    );
    return tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 3);
  });
  assert.equal(result, 3);
  await store.close();
});

test(`more than MAX_QUEUED_TRANSACTIONS waiting are refused`, async () => {
  const { store } = await freshStore();
  const gate = deferred();
  const running = store.transaction(() => gate.promise);
  const waiting = Array.from({ length: MAX_QUEUED_TRANSACTIONS }, () => store.transaction(async () => 1));
  await assert.rejects(
    store.transaction(async () => 1),
    StoreOverloadedError,
  );
  gate.resolve();
  await running;
  assert.equal((await Promise.all(waiting)).length, MAX_QUEUED_TRANSACTIONS);
  await store.close();
});
