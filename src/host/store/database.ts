// Opening the host's SQLite file: WAL (the CLI and the daemon share it), FULL sync, a busy timeout,
// the numbered migrations (migrations/) by the shared runner, which refuses a schema newer than
// this binary.
import { backup, DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { applyMigrations } from '../../common/sqlite-migrations.ts';
import { MIGRATIONS } from './migrations/index.ts';

/** How long a writer waits for another process's write lock before giving up. */
export const STORE_BUSY_TIMEOUT_MS = 10_000;

export class StoreError extends Error {}

export type Row = Record<string, SQLInputValue>;

/** A write that must join a caller's transaction was called outside of one: a bug in the caller. */
export class NoTransactionError extends Error {
  override name = 'NoTransactionError';
}

/**
 * A thin wrapper over DatabaseSync: cached statements and transactions. The outermost
 * `transaction(fn)` is BEGIN IMMEDIATE … COMMIT; a nested one is a SAVEPOINT inside it, so an inner
 * part that throws takes back only its own writes and the outer one decides what to do (nothing
 * commits before the outermost COMMIT). A function that writes several rows which must commit
 * together with its caller's calls `assertTransaction()` instead of opening one.
 */
export class Database {
  readonly #db: DatabaseSync;
  // One prepared statement per distinct SQL text in the code: bounded by the source, not by input.
  readonly #statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
  /** open transactions: 0 none, 1 the outermost, more the savepoints inside it */
  #depth = 0;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  #statement(sql: string): ReturnType<DatabaseSync['prepare']> {
    let stmt = this.#statements.get(sql);
    if (stmt === undefined) {
      stmt = this.#db.prepare(sql);
      this.#statements.set(sql, stmt);
    }
    return stmt;
  }

  run(sql: string, ...params: SQLInputValue[]): { changes: number; lastInsertRowid: number } {
    const r = this.#statement(sql).run(...params);
    return { changes: Number(r.changes), lastInsertRowid: Number(r.lastInsertRowid) };
  }

  get<T>(sql: string, ...params: SQLInputValue[]): T | undefined {
    return this.#statement(sql).get(...params) as T | undefined;
  }

  all<T>(sql: string, ...params: SQLInputValue[]): T[] {
    return this.#statement(sql).all(...params) as T[];
  }

  exec(sql: string): void {
    this.#db.exec(sql);
  }

  /**
   * Runs `fn` in a transaction: BEGIN IMMEDIATE … COMMIT, or inside an open one a savepoint. Either
   * is rolled back if `fn` throws, and the error goes on.
   */
  transaction<T>(fn: () => T): T {
    const savepoint = this.#depth === 0 ? null : `nested_${this.#depth}`;
    this.#db.exec(savepoint === null ? 'BEGIN IMMEDIATE' : `SAVEPOINT ${savepoint}`);
    this.#depth++;
    try {
      const result = fn();
      this.#db.exec(savepoint === null ? 'COMMIT' : `RELEASE ${savepoint}`);
      return result;
    } catch (err) {
      // SQLite rolls back by itself after some errors (a full disk, an I/O error): the error to report is the first one
      try {
        if (this.#db.isTransaction) this.#db.exec(savepoint === null ? 'ROLLBACK' : `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
      } catch {
        // the first error is the one to report; the connection ends the transaction either way
      }
      throw err;
    } finally {
      this.#depth--;
    }
  }

  get inTransaction(): boolean {
    return this.#depth > 0;
  }

  /** Throws NoTransactionError unless a transaction is open: `what` must commit with its caller's writes. */
  assertTransaction(what: string): void {
    if (this.#depth === 0) throw new NoTransactionError(`${what} must run inside a store transaction`);
  }

  /**
   * SQLite's online backup of this database into the file at `path`, all pages in one step: one
   * consistent snapshot, taken while other connections (the daemon) go on writing.
   */
  async backupTo(path: string): Promise<void> {
    await backup(this.#db, path, { rate: -1 });
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }
}

/** SQLite's words for a file that is not, or no longer, a whole database. */
const DAMAGED_RE = /not a database|malformed|corrupt/i;
/** What to do about a damaged store, after the reason. */
const DAMAGED_FIX =
  '; stop the daemon, move the file aside (mv host.db host.db.damaged) and put back your last copy of it; ' +
  'without one, the next command makes an empty store and this host must pair again';

export function openDatabase(path: string): Database {
  let raw: DatabaseSync;
  try {
    raw = new DatabaseSync(path, { timeout: STORE_BUSY_TIMEOUT_MS, enableForeignKeyConstraints: true });
    raw.exec('PRAGMA journal_mode = WAL');
    raw.exec('PRAGMA synchronous = FULL');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new StoreError(`cannot open the host store ${path}: ${reason}${DAMAGED_RE.test(reason) ? DAMAGED_FIX : ''}`, { cause: err });
  }
  try {
    applyMigrations(raw, MIGRATIONS, {
      store: 'host store',
      readVersion: (db) => userVersion(db),
      writeVersion: (db, version) => db.exec(`PRAGMA user_version = ${version}`),
      newError: (message, options) => new StoreError(`${message} (${path})`, options),
    });
  } catch (err) {
    raw.close();
    throw err;
  }
  return new Database(raw);
}

function userVersion(db: DatabaseSync): number {
  return (db.prepare('PRAGMA user_version').get() as { user_version: number } | undefined)?.user_version ?? 0;
}

export function schemaVersion(db: Database): number {
  return db.get<{ user_version: number }>('PRAGMA user_version')?.user_version ?? 0;
}
