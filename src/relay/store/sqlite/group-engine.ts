// How the SQLite writer runs a group transaction for the shared runner (../sql/group-runner.ts):
// BEGIN IMMEDIATE, a savepoint per member, one COMMIT. SQLite may roll back the whole transaction
// on its own (SQLITE_FULL, I/O errors): a member that finds it gone loses the group.
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseSync, SQLTagStore } from 'node:sqlite';
import { sqliteResultCode } from '../../../common/disk-fault.ts';
import { runGuarded, type GroupEngine } from '../sql/group-runner.ts';
import type { UseSql } from './use-sql.ts';

/** How long a group of a shared store waits for another process to release SQLite's write lock before it fails. */
export const SHARED_WRITE_LOCK_WAIT_MS = 5_000;
/** Tries at the write lock on the next event-loop turn before a shared store waits a millisecond between tries. */
const WRITE_LOCK_QUICK_TRIES = 2;
const SQLITE_BUSY = 5;
const SAVEPOINT = 'member';

/** A member's work: the caller's fn, handed a transactor over the guarded statement handle. */
export type SqliteWork = (use: UseSql) => Promise<unknown>;

/**
 * The writer's group transactions. `sharedWriters`: other processes write to the same file, so
 * BEGIN IMMEDIATE waits for their write lock on timers (the writer's busy timeout must be 0).
 */
export function sqliteGroupEngine(db: DatabaseSync, sql: SQLTagStore, sharedWriters: boolean): GroupEngine<SqliteWork> {
  return {
    group: () => ({
      async begin() {
        if (sharedWriters) await beginShared(db);
        else db.exec('BEGIN IMMEDIATE');
      },
      savepoint() {
        db.exec(`SAVEPOINT ${SAVEPOINT}`);
        return Promise.resolve();
      },
      run: (work) => runGuarded(sql, work),
      async release() {
        if (!db.isTransaction) throw new Error('the relay store transaction ended unexpectedly');
        db.exec(`RELEASE ${SAVEPOINT}`);
      },
      async rollbackTo(error) {
        if (!db.isTransaction) throw error;
        db.exec(`ROLLBACK TO ${SAVEPOINT}`);
        db.exec(`RELEASE ${SAVEPOINT}`);
      },
      async commit() {
        db.exec('COMMIT');
      },
      async rollback() {
        try {
          // SQLite may already have rolled back on its own (for example after SQLITE_FULL)
          if (db.isTransaction) db.exec('ROLLBACK');
          return null;
        } catch (error) {
          return error;
        }
      },
    }),
  };
}

/** BEGIN IMMEDIATE on a shared store: while another process holds the write lock, tries again on timers. */
async function beginShared(db: DatabaseSync): Promise<void> {
  const deadline = performance.now() + SHARED_WRITE_LOCK_WAIT_MS;
  for (let tries = 1; ; tries += 1) {
    try {
      db.exec('BEGIN IMMEDIATE');
      return;
    } catch (error) {
      if (sqliteResultCode(error) !== SQLITE_BUSY || performance.now() >= deadline) throw error;
    }
    await (tries <= WRITE_LOCK_QUICK_TRIES ? nextTurn() : sleep(1));
  }
}
