// The SQLite backend against the shared-state contract, and two store connections sharing one file
// as the processes of a relay group do (each gathers its groups, waits for the write lock on timers).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freshStore, item, RELAY_KEY } from './store-fixtures.ts';
import { describeSharedState } from './shared-state-contract.ts';
import { openSqliteRelayStore } from '../../../src/relay/store/sqlite/index.ts';

describeSharedState('sqlite', async () => {
  const { store } = await freshStore();
  return { store, close: () => store.close() };
});

test('two shared stores on one file: concurrent writes from both interleave, every seq unique and increasing per target', async () => {
  const { store: first, dir } = await freshStore({ sharedWriters: true });
  const second = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY, sharedWriters: true });
  const perStore = 200;
  const insert = (store: typeof first, tag: string) => Array.from({ length: perStore }, (_, i) =>
    store.transaction((tx) => tx.insertItem(item({ targetPubkey: 'T', itemId: `${tag}-${i}` }), 1_000)));
  const seqs = await Promise.all([...insert(first, 'a'), ...insert(second, 'b')]);
  assert.equal(new Set(seqs).size, 2 * perStore, 'no seq handed out twice');
  const page = await second.transaction((tx) => tx.pull('T', 0, 2 * perStore, 1e9), { readOnly: true });
  assert.equal(page.items.length, 2 * perStore);
  const pulled = page.items.map((i) => i.seq);
  assert.deepEqual(pulled, [...pulled].sort((a, b) => a - b), 'pulled in seq order');
  assert.deepEqual([...seqs].sort((a, b) => a - b), pulled, 'every acknowledged seq is there');
  await Promise.all([first.close(), second.close()]);
});
