// The store's own WAL sync (wal-sync.ts): the writer commits with synchronous=NORMAL, so a write may
// settle only after a sync that started after its COMMIT has returned; a failed sync fails what it
// covered and stops the store.
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RelayTransactor } from '../../../src/relay/store/relay-store.ts';
import { StoreDiskError } from '../../../src/relay/store/errors.ts';
import { SYSTEM_SCHEDULER } from '../../../src/relay/store/sqlite/group-commit.ts';
import { RELAY_DB_FILE } from '../../../src/relay/store/sqlite/index.ts';
import { walFileSyncer, type WalSyncer } from '../../../src/relay/store/sqlite/wal-sync.ts';
import { tempDir } from '../../helpers/processes.ts';
import { freshStore, inspect, item } from './store-fixtures.ts';

/** A syncer whose syncs end only when the test says so. */
function heldSyncer(): { syncer: WalSyncer; started: () => number; finish: (error?: Error) => void; closed: () => boolean } {
  const pending: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  let count = 0;
  let closed = false;
  return {
    syncer: {
      sync: () =>
        new Promise<void>((resolve, reject) => {
          count += 1;
          pending.push({ resolve, reject });
        }),
      close: async () => {
        closed = true;
      },
    },
    started: () => count,
    finish: (error) => {
      const next = pending.shift();
      if (next === undefined) throw new Error('no sync is running');
      if (error === undefined) next.resolve();
      else next.reject(error);
    },
    closed: () => closed,
  };
}

function insert(itemId: string) {
  return (tx: RelayTransactor): Promise<number> => tx.items.insert(item({ targetPubkey: 'T', itemId }), 5);
}

/** Lets the event loop run until `condition` holds (the store's work is all in-process). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition())
    await new Promise((resolve) => {
      setImmediate(resolve);
    });
}

test('a write settles only after the WAL sync that follows its COMMIT, and the store opens with synchronous=NORMAL', { timeout: 10_000 }, async () => {
  const held = heldSyncer();
  const { store, dir } = await freshStore({ walSyncer: held.syncer });
  assert.equal(store.connectionSettings().synchronous, 'NORMAL');
  let settled = false;
  const write = store.transaction(insert('a')).then((seq) => {
    settled = true;
    return seq;
  });
  await until(() => held.started() === 1);
  // committed (another connection sees it) but not answered until the sync returns
  assert.deepEqual(
    inspect(dir, (db) =>
      db
        .prepare('SELECT item_id FROM items')
        .all()
        .map((row) => row.item_id),
    ),
    ['a'],
  );
  for (let turn = 0; turn < 20; turn += 1)
    await new Promise((resolve) => {
      setImmediate(resolve);
    });
  assert.equal(settled, false, 'answered before its commit was synced');
  held.finish();
  assert.equal(await write, 5);
  const closing = store.close();
  await closing;
  assert.equal(held.closed(), true);
});

test('writes arriving while a sync runs gather in one open group, committed when that sync ends and covered by the next', { timeout: 10_000 }, async () => {
  const held = heldSyncer();
  // time stands still: the group closes on the rules, not because a loaded machine let its window pass
  const { store } = await freshStore({ walSyncer: held.syncer, scheduler: { ...SYSTEM_SCHEDULER, nowMs: () => 1_000 } });
  const order: string[] = [];
  const first = store.transaction(insert('a')).then(() => {
    order.push('a');
  });
  await until(() => held.started() === 1);
  const second = store.transaction(insert('b')).then(() => {
    order.push('b');
  });
  const third = store.transaction(insert('c')).then(() => {
    order.push('c');
  });
  // b and c have all the event-loop turns they could want to commit: they wait in an open group
  for (let turn = 0; turn < 50; turn += 1)
    await new Promise((resolve) => {
      setImmediate(resolve);
    });
  assert.equal(store.groupStats().commits, 1, 'b and c wait in an open group while the sync runs');
  assert.equal(held.started(), 1, 'one sync at a time');
  held.finish();
  await first;
  await until(() => held.started() === 2);
  assert.deepEqual(order, ['a'], 'the first sync does not cover b and c: they were committed after it began');
  assert.deepEqual({ commits: store.groupStats().commits, lastGroupSize: store.groupStats().lastGroupSize }, { commits: 2, lastGroupSize: 2 });
  held.finish();
  await Promise.all([second, third]);
  assert.deepEqual(order, ['a', 'b', 'c']);
  assert.equal(store.groupStats().syncs, 2);
  await store.close();
});

test("a failed sync fails the writes it covered, keeps a rejected member's own error, and the store takes no more work", { timeout: 10_000 }, async () => {
  const held = heldSyncer();
  const { store } = await freshStore({ walSyncer: held.syncer });
  const good = store.transaction(insert('a'));
  const own = store.transaction(async (tx) => {
    await insert('b')(tx);
    throw new Error('its own refusal');
  });
  await until(() => held.started() === 1);
  held.finish(new Error('EIO: i/o error, fdatasync'));
  await assert.rejects(good, (error: unknown) => error instanceof StoreDiskError && error.fault === 'sync' && /could not sync its log/.test(error.message));
  await assert.rejects(own, /its own refusal/);
  await assert.rejects(store.transaction(insert('c')), StoreDiskError);
  await assert.rejects(
    store.read((tx) => tx.items.headSeq('T')),
    StoreDiskError,
  );
  await store.close();
});

test('the WAL file syncer fails loudly on a missing file and follows a replaced one', async () => {
  const dir = tempDir();
  const path = join(dir, `${RELAY_DB_FILE}-wal`);
  await assert.rejects(walFileSyncer(path).sync(), /ENOENT/);
  writeFileSync(path, 'first');
  const syncer = walFileSyncer(path);
  await syncer.sync();
  writeFileSync(join(dir, 'other'), 'second');
  renameSync(join(dir, 'other'), path);
  await syncer.sync(); // reopened: the stale descriptor is not the only one synced
  renameSync(path, join(dir, 'gone'));
  await assert.rejects(syncer.sync(), /ENOENT/);
  await syncer.close();
});
