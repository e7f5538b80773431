// The group-transaction runner both SQL backends share (src/relay/store/sql/group-runner.ts): each
// rule it keeps, once over the real SQLite engine on a real database file (the SQLite store's own
// group engine), and the rules that hinge on the engine again through the PostgreSQL store on a
// throwaway cluster (skipped, saying why, where PostgreSQL is not installed).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { StoreOverloadedError, TransactionMisuseError } from '../../../src/relay/store/errors.ts';
import { openPostgresRelayStore } from '../../../src/relay/store/postgres/open-store.ts';
import type { PostgresRelayStore } from '../../../src/relay/store/postgres/postgres-relay-store.ts';
import {
  GroupRunner,
  MAX_QUEUED_TRANSACTIONS,
  type AfterCommit,
  type GroupEngine,
  type GroupRunnerOptions,
} from '../../../src/relay/store/sql/group-runner.ts';
import { sqliteGroupEngine, type SqliteWork } from '../../../src/relay/store/sqlite/group-engine.ts';
import { freshPostgresDatabase } from '../../helpers/postgres-test-cluster.ts';
import { tempDir } from '../../helpers/processes.ts';
import { item } from './behaviour/harness.ts';
import { RELAY_KEY } from './store-fixtures.ts';

function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(resolve);
  });
}

/** Lets the event loop run until `condition` holds (the runner's work is all in-process). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await nextTurn();
}

/**
 * A runner over the SQLite store's group engine on a fresh database file. Its gathering takes
 * whatever is queued while the group is open, so transactions asked for together share one group.
 * `child` rows reference `parent` rows with a deferred foreign key: a dangling one fails the COMMIT.
 */
function sqliteRunner(
  options: Partial<Omit<GroupRunnerOptions<SqliteWork>, 'engine'>> & { engine?: (base: GroupEngine<SqliteWork>) => GroupEngine<SqliteWork> } = {},
) {
  const path = join(tempDir('agentmbx-runner-'), 'runner.db');
  const db = new DatabaseSync(path);
  db.exec(`PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;
    CREATE TABLE rows (name TEXT NOT NULL);
    CREATE TABLE parent (id INTEGER PRIMARY KEY);
    CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);`);
  const base = sqliteGroupEngine(db, db.createTagStore(), false);
  const runner = new GroupRunner<SqliteWork>({
    gathering: { beforeBegin: false, joins: (state) => state.waiting > 0 },
    nowMs: () => performance.now(),
    pendingReads: () => 0,
    ...options,
    engine: options.engine?.(base) ?? base,
  });
  /** the names committed, as another connection sees them */
  const committed = (): string[] => {
    const other = new DatabaseSync(path, { readOnly: true });
    try {
      return other
        .prepare('SELECT name FROM rows ORDER BY rowid')
        .all()
        .map((row) => String(row.name));
    } finally {
      other.close();
    }
  };
  const insert =
    (name: string): SqliteWork =>
    async (use) => {
      use().run`INSERT INTO rows (name) VALUES (${name})`;
      return name;
    };
  const close = async (): Promise<void> => {
    await runner.close();
    db.close();
  };
  return { runner, committed, insert, close };
}

describe('the group runner over SQLite', () => {
  test('a transaction started inside another one fails at once instead of waiting for itself', { timeout: 10_000 }, async () => {
    const { runner, insert, committed, close } = sqliteRunner();
    const outer = await runner.transaction(async (use) => {
      await assert.rejects(runner.transaction(insert('inner')), TransactionMisuseError);
      use().run`INSERT INTO rows (name) VALUES ('outer')`;
      return 'done';
    });
    assert.equal(outer, 'done');
    assert.equal(await runner.transaction(insert('after')), 'after', 'once the outer one ended, a new one is taken');
    assert.deepEqual(committed(), ['outer', 'after']);
    await close();
  });

  test(`at most MAX_QUEUED_TRANSACTIONS wait, reads the backend counts included; the next is refused`, { timeout: 10_000 }, async () => {
    let reads = 0;
    const { runner, close } = sqliteRunner({ pendingReads: () => reads });
    const held = gate();
    const running = runner.transaction(() => held.promise);
    reads = 1;
    const waiting = Array.from({ length: MAX_QUEUED_TRANSACTIONS - 1 }, () => runner.transaction(async () => 1));
    await assert.rejects(
      runner.transaction(async () => 1),
      StoreOverloadedError,
    );
    reads = 0;
    waiting.push(runner.transaction(async () => 1));
    await assert.rejects(
      runner.transaction(async () => 1),
      StoreOverloadedError,
    );
    held.open();
    await running;
    assert.equal((await Promise.all(waiting)).length, MAX_QUEUED_TRANSACTIONS);
    await close();
  });

  test('a failing member is rolled back to its savepoint while the others of its group commit', { timeout: 10_000 }, async () => {
    const { runner, insert, committed, close } = sqliteRunner();
    const first = runner.transaction(insert('a'));
    const failing = runner.transaction(async (use) => {
      use().run`INSERT INTO rows (name) VALUES ('b')`;
      throw new Error('its own refusal');
    });
    const third = runner.transaction(insert('c'));
    assert.equal(await first, 'a');
    await assert.rejects(failing, /its own refusal/);
    assert.equal(await third, 'c');
    assert.deepEqual(runner.counts(), { commits: 1, transactions: 3, lastGroupSize: 3 }, 'one group, one COMMIT');
    assert.deepEqual(committed(), ['a', 'c']);
    await close();
  });

  test('a group that fails to commit fails its members with its error, but one that failed on its own keeps its own', async () => {
    const { runner, insert, committed, close } = sqliteRunner();
    const first = runner.transaction(insert('a'));
    const own = runner.transaction(async () => {
      throw new Error('its own refusal');
    });
    // a dangling child: the deferred foreign key fails the group's COMMIT
    const dangling = runner.transaction(async (use) => {
      use().run`INSERT INTO child (id, parent) VALUES (1, 99)`;
      return 'dangling';
    });
    const results = await Promise.allSettled([first, own, dangling]);
    const reasons = results.map((result) => (result.status === 'rejected' ? String((result.reason as Error).message) : 'resolved'));
    assert.match(reasons[0] ?? '', /FOREIGN KEY/);
    assert.equal(reasons[1], 'its own refusal');
    assert.match(reasons[2] ?? '', /FOREIGN KEY/);
    assert.deepEqual(committed(), [], 'the whole group was rolled back');
    assert.equal(runner.counts().commits, 0);
    assert.equal(await runner.transaction(insert('next')), 'next', 'the next group runs');
    assert.deepEqual(committed(), ['next']);
    await close();
  });

  test('the after-commit step runs only once the group committed, and its members settle only after it', { timeout: 10_000 }, async () => {
    const held = gate();
    const seenByStep: string[][] = [];
    let settled = 0;
    let syncedGroups = 0;
    const afterCommit: AfterCommit = {
      run: async () => {
        seenByStep.push(committed());
        assert.equal(settled, 0, 'no member settled before the step');
        await held.promise;
      },
    };
    const { runner, insert, committed, close } = sqliteRunner({
      afterCommit,
      onGroupCommit: (size) => {
        syncedGroups += size;
      },
    });
    const members = ['a', 'b'].map((name) =>
      runner.transaction(insert(name)).then(() => {
        settled += 1;
      }),
    );
    await until(() => seenByStep.length === 1);
    assert.deepEqual(seenByStep, [['a', 'b']], 'the step saw the group committed');
    for (let turn = 0; turn < 20; turn += 1) await nextTurn();
    assert.equal(settled, 0, 'answered before the after-commit step returned');
    assert.equal(syncedGroups, 0);
    held.open();
    await Promise.all(members);
    assert.equal(syncedGroups, 2);
    await close();
  });

  test("a failed after-commit step fails the members it covered, keeps a member's own error, and the runner takes no more work", async () => {
    const lost = new Error('the step failed');
    const { runner, insert, close } = sqliteRunner({
      afterCommit: {
        run: async () => {
          throw lost;
        },
      },
    });
    const good = runner.transaction(insert('a'));
    const own = runner.transaction(async () => {
      throw new Error('its own refusal');
    });
    await assert.rejects(good, (error) => error === lost);
    await assert.rejects(own, /its own refusal/);
    await assert.rejects(runner.transaction(insert('b')), (error) => error === lost);
    assert.equal(runner.refusal(), lost, 'reads the backend runs itself are refused too');
    await close();
  });

  test('a member the engine runs again goes first in the next group, its earlier runs rolled back', { timeout: 10_000 }, async () => {
    const retry = new Error('a deadlock victim');
    const { runner, committed, close } = sqliteRunner({
      engine: (base) => ({ ...base, runsAgain: (error, attempts) => error === retry && attempts < 3 }),
    });
    let runs = 0;
    const victim = runner.transaction(async (use) => {
      runs += 1;
      use().run`INSERT INTO rows (name) VALUES (${`victim ${runs}`})`;
      if (runs < 3) throw retry;
      return runs;
    });
    const after = runner.transaction(async (use) => {
      use().run`INSERT INTO rows (name) VALUES ('after')`;
    });
    assert.equal(await victim, 3);
    await after;
    assert.deepEqual(committed(), ['after', 'victim 3']);
    let refusedRuns = 0;
    await assert.rejects(
      runner.transaction(async () => {
        refusedRuns += 1;
        throw retry;
      }),
      (error) => error === retry,
    );
    assert.equal(refusedRuns, 3, "at most the engine's attempts");
    await close();
  });

  test('a full group leaves the rest of its members, in order, to the next group', { timeout: 10_000 }, async () => {
    const { runner, insert, committed, close } = sqliteRunner({
      engine: (base) => ({
        ...base,
        group: () => {
          let size = 0;
          const tx = base.group();
          return {
            ...tx,
            release: () => {
              size += 1;
              return tx.release();
            },
            full: () => size >= 2,
          };
        },
      }),
    });
    const names = ['a', 'b', 'c', 'd', 'e'];
    assert.deepEqual(await Promise.all(names.map((name) => runner.transaction(insert(name)))), names);
    assert.equal(runner.counts().commits, 3);
    assert.deepEqual(committed(), names);
    await close();
  });
});

const database = await freshPostgresDatabase();

describe('the group runner over PostgreSQL', { skip: 'skip' in database ? database.skip : false }, () => {
  let store: PostgresRelayStore;
  let observer: pg.Client;
  const groupSizes: number[] = [];
  before(async () => {
    const url = 'url' in database ? database.url : '';
    store = await openPostgresRelayStore({
      url,
      relayPubkey: RELAY_KEY,
      onGroupCommit: (size) => {
        groupSizes.push(size);
      },
    });
    observer = new pg.Client({ connectionString: url });
    await observer.connect();
  });
  after(async () => {
    await observer.end();
    await store.close();
  });

  /** Three transactions queued while another holds the writer, so that they share the next group. */
  async function behindAHeldGroup(members: Array<() => Promise<unknown>>): Promise<Array<PromiseSettledResult<unknown>>> {
    const held = gate();
    const holding = store.transaction(() => held.promise);
    const queued = members.map((member) => member());
    held.open();
    await holding;
    return Promise.allSettled(queued);
  }

  test('a transaction started inside another one fails at once instead of waiting for itself', { timeout: 10_000 }, async () => {
    const target = RELAY_KEY;
    const seq = await store.transaction(async (tx) => {
      await assert.rejects(
        store.transaction((inner) => inner.items.headSeq(target)),
        TransactionMisuseError,
      );
      await assert.rejects(
        store.read((inner) => inner.items.headSeq(target)),
        TransactionMisuseError,
      );
      return tx.items.headSeq(target);
    });
    assert.equal(seq, 0);
  });

  test('a failing member is rolled back to its savepoint while the others of its group commit', async () => {
    groupSizes.length = 0;
    const target = 'runner-savepoint';
    const results = await behindAHeldGroup([
      () => store.transaction((tx) => tx.items.insert(item({ targetPubkey: target, itemId: 'a' }), 5)),
      () =>
        store.transaction(async (tx) => {
          await tx.items.insert(item({ targetPubkey: target, itemId: 'b' }), 5);
          throw new Error('its own refusal');
        }),
      () => store.transaction((tx) => tx.items.insert(item({ targetPubkey: target, itemId: 'c' }), 5)),
    ]);
    assert.deepEqual(
      results.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message)),
      [5, 'its own refusal', 6],
      'the rolled-back seq was never handed out',
    );
    assert.deepEqual(groupSizes, [1, 3], 'the held one alone, then the three in one group');
    const page = await store.read((reader) => reader.items.pull(target, 0, 10, 100_000));
    assert.deepEqual(
      page.items.map((pulled) => pulled.itemId),
      ['a', 'c'],
    );
  });

  test('a group whose connection dies before COMMIT fails its members with its error, but one that failed on its own keeps its own', {
    timeout: 20_000,
  }, async () => {
    const target = 'runner-lost';
    const held = gate();
    let inGroup = (): void => {};
    const reached = new Promise<void>((resolve) => {
      inGroup = resolve;
    });
    const results = behindAHeldGroup([
      () => store.transaction((tx) => tx.items.insert(item({ targetPubkey: target, itemId: 'a' }), 5)),
      () =>
        store.transaction(async () => {
          throw new Error('its own refusal');
        }),
      () =>
        store.transaction(async () => {
          inGroup();
          await held.promise;
          return 'last';
        }),
    ]);
    await reached;
    const { rows } = await observer.query(`SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`);
    assert.equal(rows.length, 1, "the group's connection holds the one open write");
    await observer.query('SELECT pg_terminate_backend($1)', [(rows[0] as { pid: number }).pid]);
    held.open();
    const [first, own, last] = await results;
    assert.equal(first?.status, 'rejected');
    assert.equal(last?.status, 'rejected');
    assert.equal(own?.status === 'rejected' ? (own.reason as Error).message : 'resolved', 'its own refusal');
    assert.equal(await store.read((reader) => reader.items.headSeq(target)), 0, 'nothing of the group committed');
    assert.equal(await store.transaction((tx) => tx.items.insert(item({ targetPubkey: target, itemId: 'after' }), 5)), 5, 'the store carries on');
  });
});
