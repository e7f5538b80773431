import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RelayTransactor } from '../../../src/relay/store/relay-store.ts';
import type { GroupScheduler } from '../../../src/relay/store/sqlite/index.ts';
import { openSqliteRelayStore, type SqliteRelayStore } from '../../../src/relay/store/sqlite/index.ts';
import { lingers } from '../../../src/relay/store/sqlite/group-commit.ts';
import { spawnNode, tempDir } from '../../helpers/processes.ts';
import { TestClock } from '../../helpers/clock.ts';
import { freshStore, inspect, item, RELAY_KEY } from './store-fixtures.ts';

/** A clock that moves only when told and a defer queue that runs only when told. */
function manualScheduler(): { scheduler: GroupScheduler; clock: TestClock; deferred: Array<() => void> } {
  const clock = new TestClock(1_000);
  const deferred: Array<() => void> = [];
  return {
    clock,
    deferred,
    scheduler: {
      nowMs: clock.nowMs,
      defer: (fn) => {
        deferred.push(fn);
      },
    },
  };
}

/** Real event-loop turns, but a clock that never moves: groups close only on an empty queue, the size cap or a read. */
const FROZEN_CLOCK: GroupScheduler = {
  nowMs: () => 0,
  defer: (fn) => {
    setImmediate(fn);
  },
};

/** The group counters these tests fix (how many WAL syncs covered the groups depends on timing). */
function groupCounts(store: SqliteRelayStore): { commits: number; transactions: number; lastGroupSize: number } {
  const { commits, transactions, lastGroupSize } = store.groupStats();
  return { commits, transactions, lastGroupSize };
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(resolve);
  });
}

function insert(itemId: string) {
  return (tx: RelayTransactor): Promise<number> => tx.items.insert(item({ targetPubkey: 'T', itemId }), 5);
}

function storedIds(dir: string): string[] {
  return inspect(dir, (db) =>
    db
      .prepare('SELECT item_id FROM items ORDER BY seq')
      .all()
      .map((row) => String(row.item_id)),
  );
}

test('transactions queued together share one COMMIT and keep their order', async () => {
  const { store, dir } = await freshStore({ scheduler: FROZEN_CLOCK });
  const seqs = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => store.transaction(insert(id))));
  assert.deepEqual(seqs, [5, 6, 7, 8, 9]);
  assert.deepEqual(groupCounts(store), { commits: 1, transactions: 5, lastGroupSize: 5 });
  assert.deepEqual(storedIds(dir), ['a', 'b', 'c', 'd', 'e']);
  await store.close();
});

test('one failing transaction rolls back only its own savepoint', async () => {
  const { store, dir } = await freshStore({ scheduler: FROZEN_CLOCK });
  const first = store.transaction(insert('a'));
  const failing = store.transaction(async (tx) => {
    await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }), 5);
    await tx.hostRecords.putSenderList({ targetPubkey: 'T', senders: ['S'], iat: 1, record: '{}', sig: 's' });
    throw new Error('rejected item');
  });
  const third = store.transaction(insert('c'));
  assert.equal(await first, 5);
  await assert.rejects(failing, /rejected item/);
  assert.equal(await third, 6, 'the rolled-back seq was never handed out');
  assert.deepEqual(groupCounts(store), { commits: 1, transactions: 3, lastGroupSize: 3 });
  assert.deepEqual(storedIds(dir), ['a', 'c']);
  assert.equal(await store.transaction((tx) => tx.hostRecords.senderList('T')), null);
  await store.close();
});

test('every member resolves only after the shared COMMIT is on disk', async () => {
  const { store, dir } = await freshStore({ scheduler: FROZEN_CLOCK });
  const seenOnDisk: string[][] = [];
  const members = ['a', 'b', 'c'].map((id) =>
    store.transaction(insert(id)).then(() => {
      seenOnDisk.push(storedIds(dir));
    }),
  );
  await Promise.all(members);
  // the first member already sees the last member's item through another connection: one commit
  assert.deepEqual(seenOnDisk, [
    ['a', 'b', 'c'],
    ['a', 'b', 'c'],
    ['a', 'b', 'c'],
  ]);
  await store.close();
});

test('a lone transaction on an idle store commits at once in a group of one, waiting for no timer', async () => {
  const { scheduler, clock, deferred } = manualScheduler();
  const { store } = await freshStore({ scheduler, groupCommit: { maxItems: 100, maxWaitMs: 5 } });
  assert.equal(await store.transaction(insert('a')), 5);
  assert.deepEqual(groupCounts(store), { commits: 1, transactions: 1, lastGroupSize: 1 });
  clock.now += 5; // idle for the whole wait: the next lone transaction starts at once too
  assert.equal(await store.transaction(insert('b')), 6);
  assert.deepEqual(groupCounts(store), { commits: 2, transactions: 2, lastGroupSize: 1 });
  assert.equal(deferred.length, 0, 'nothing was put off');
  await store.close();
});

test('on a busy store the next group starts one event-loop turn later, gathering what arrived meanwhile', async () => {
  const { scheduler, clock, deferred } = manualScheduler();
  const { store } = await freshStore({ scheduler, groupCommit: { maxItems: 100, maxWaitMs: 5 } });
  await store.transaction(insert('a'));
  await nextTurn(); // the drain that ran 'a' has ended
  clock.now += 1; // a commit 1 ms ago: busy
  let settled = 0;
  const late = ['b', 'c', 'd'].map((id) =>
    store.transaction(insert(id)).then((seq) => {
      settled += 1;
      return seq;
    }),
  );
  await nextTurn();
  assert.equal(settled, 0, 'the group waits for its turn');
  assert.equal(deferred.length, 1);
  deferred.shift()?.();
  assert.deepEqual(await Promise.all(late), [6, 7, 8]);
  assert.deepEqual(groupCounts(store), { commits: 2, transactions: 4, lastGroupSize: 3 });
  await store.close();
});

test('on a busy store a group that runs dry while smaller than the last one lingers a turn at a time for stragglers', async () => {
  const { scheduler, clock, deferred } = manualScheduler();
  const { store } = await freshStore({ scheduler, groupCommit: { maxItems: 100, maxWaitMs: 5 } });
  await Promise.all(['a', 'b', 'c'].map((id) => store.transaction(insert(id))));
  await nextTurn();
  clock.now += 1; // busy: the last group (of 3) committed 1 ms ago
  const first = store.transaction(insert('d'));
  deferred.shift()?.(); // the group starts with d, runs dry at 1 < 3 members and lingers
  await nextTurn();
  assert.equal(deferred.length, 1, 'lingering one turn');
  const straggler = store.transaction(insert('e'));
  deferred.shift()?.(); // takes e, runs dry at 2 < 3 and lingers again
  await nextTurn();
  assert.equal(deferred.length, 1);
  deferred.shift()?.(); // nothing new arrived: the group commits
  assert.deepEqual(await Promise.all([first, straggler]), [8, 9]);
  assert.deepEqual(groupCounts(store), { commits: 2, transactions: 5, lastGroupSize: 2 });
  assert.equal(deferred.length, 0);
  await store.close();
});

test('a busy group that runs dry lingers while callers are being checked off the event loop, and commits once none are', async () => {
  const { scheduler, clock, deferred } = manualScheduler();
  let checking = false;
  const { store } = await freshStore({ scheduler, groupCommit: { maxItems: 100, maxWaitMs: 5 }, writersPending: () => checking });
  await store.transaction(insert('a'));
  await nextTurn();
  clock.now += 1; // busy: the last group (of 1) committed 1 ms ago
  checking = true;
  const first = store.transaction(insert('b'));
  deferred.shift()?.(); // the group starts with b and runs dry as big as the last one: only the check keeps it open
  await nextTurn();
  assert.equal(deferred.length, 1, 'lingering while a hop check is out');
  const checked = store.transaction(insert('c'));
  checking = false;
  deferred.shift()?.(); // takes c; nothing is being checked any more: the group commits
  await nextTurn();
  const [seqB, seqC] = await Promise.all([first, checked]);
  assert.equal(seqC, (seqB as number) + 1);
  assert.deepEqual(groupCounts(store), { commits: 2, transactions: 3, lastGroupSize: 2 });
  assert.equal(deferred.length, 0);
  await store.close();
});

test('a group closes at group_commit_max_items', async () => {
  const { store } = await freshStore({ scheduler: FROZEN_CLOCK, groupCommit: { maxItems: 2, maxWaitMs: 5 } });
  await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => store.transaction(insert(id))));
  assert.deepEqual(groupCounts(store), { commits: 3, transactions: 5, lastGroupSize: 1 });
  await store.close();
});

test('a group closes once it has been open group_commit_max_wait_ms, even with work queued', async () => {
  const { scheduler, clock } = manualScheduler();
  const { store } = await freshStore({ scheduler, groupCommit: { maxItems: 100, maxWaitMs: 5 } });
  const slow = store.transaction(async (tx) => {
    clock.now += 5;
    return tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 5);
  });
  const others = ['b', 'c'].map((id) => store.transaction(insert(id)));
  await Promise.all([slow, ...others]);
  assert.deepEqual(groupCounts(store), { commits: 2, transactions: 3, lastGroupSize: 2 }, 'the first group closed after its slow member');
  await store.close();
});

test('a read-only transaction never waits for an open write group and sees only what was committed', async () => {
  const { store } = await freshStore({ scheduler: FROZEN_CLOCK });
  await store.transaction(insert('a'));
  let release = (): void => {};
  let inside = (): void => {};
  const groupOpen = new Promise<void>((resolve) => {
    inside = resolve;
  });
  const open = store.transaction(async (tx) => {
    const seq = await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }), 5);
    await new Promise<void>((resolve) => {
      release = resolve;
      inside();
    });
    return seq;
  });
  const queuedWrite = store.transaction(insert('c'));
  await groupOpen;
  const head = await store.read((tx) => tx.items.headSeq('T'));
  assert.equal(head, 5, 'answered while the group is open, from the last commit');
  release();
  assert.deepEqual(await Promise.all([open, queuedWrite]), [6, 7]);
  assert.equal(await store.read((tx) => tx.items.headSeq('T')), 7);
  await store.close();
});

test('SIGKILL inside an open group: none of its members remain, though two had finished', async () => {
  const dir = join(tempDir(), 'store');
  const child = spawnNode([join(import.meta.dirname, 'fixtures', 'crash-mid-group.ts'), dir, RELAY_KEY]);
  await child.waitForLine(/^committed \d+$/);
  const open = await child.waitForLine(/^open after /);
  assert.equal(open, 'open after g1,g2 commits=1', 'g1 and g2 finished inside the group, which had not committed');
  child.kill('SIGKILL');
  await child.exited;
  const store = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY });
  await store.close();
  assert.deepEqual(storedIds(dir), ['committed']);
});

test('a busy group that runs dry lingers while callers are still being looked up, never past the wait or the size cap', () => {
  const policy = { maxItems: 4, maxWaitMs: 20 };
  const busy = { size: 2, previousSize: 2, openedAt: 100, writersPending: true };
  assert.equal(lingers(policy, busy, 95, 110), true, 'reads pending: writes are on their way');
  assert.equal(lingers(policy, { ...busy, writersPending: false }, 95, 110), false, 'as big as the last group and nothing pending');
  assert.equal(lingers(policy, busy, 95, 120), false, 'open for the whole wait');
  assert.equal(lingers(policy, { ...busy, size: 4 }, 95, 110), false, 'full');
  assert.equal(lingers(policy, busy, 50, 110), false, 'idle relay: the last commit is older than the wait');
  assert.equal(lingers(policy, busy, null, 110), false, 'no commit yet');
});
