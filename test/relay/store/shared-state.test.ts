// Two SQLite store connections sharing one file, as the processes of a relay group do (each
// gathers its groups before it takes the write lock, and waits for that lock on timers).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { item } from './behaviour/harness.ts';
import { freshStore, RELAY_KEY } from './store-fixtures.ts';
import { openSqliteRelayStore } from '../../../src/relay/store/sqlite/index.ts';

test('two shared stores on one file: concurrent writes from both interleave, every seq unique and increasing per target', async () => {
  const { store: first, dir } = await freshStore({ sharedWriters: true });
  const second = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY, sharedWriters: true });
  const perStore = 200;
  const insert = (store: typeof first, tag: string): Array<Promise<number>> =>
    Array.from({ length: perStore }, (_, i) => store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: `${tag}-${i}` }), 1_000)));
  const seqs = await Promise.all([...insert(first, 'a'), ...insert(second, 'b')]);
  assert.equal(new Set(seqs).size, 2 * perStore, 'no seq handed out twice');
  const page = await second.read((reader) => reader.items.pull('T', 0, 2 * perStore, 1e9));
  const pulled = page.items.map((i) => i.seq);
  assert.deepEqual(
    pulled,
    [...pulled].sort((a, b) => a - b),
    'pulled in seq order',
  );
  assert.deepEqual(
    [...seqs].sort((a, b) => a - b),
    pulled,
    'every acknowledged seq is there',
  );
  assert.ok(first.groupStats().commits > 0 && second.groupStats().commits > 0, 'both wrote');
  await Promise.all([first.close(), second.close()]);
});
