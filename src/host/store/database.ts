// Opening the host's SQLite file: WAL (the CLI and the daemon share it), FULL sync, a busy timeout,
// migrations in one transaction, and refusal of a schema newer than this binary.
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.ts';

/** How long a writer waits for another process's write lock before giving up. */
export const STORE_BUSY_TIMEOUT_MS = 10_000;

export class StoreError extends Error {}

export type Row = Record<string, SQLInputValue>;

/** A thin wrapper over DatabaseSync: cached statements and one-at-a-time immediate transactions. */
export class Database {
  readonly #db: DatabaseSync;
  // One prepared statement per distinct SQL text in the code: bounded by the source, not by input.
  readonly #statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
  #inTransaction = false;

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

  /** Runs `fn` inside BEGIN IMMEDIATE … COMMIT (rolled back if it throws). Nested calls join the outer one. */
  transaction<T>(fn: () => T): T {
    if (this.#inTransaction) return fn();
    this.#db.exec('BEGIN IMMEDIATE');
    this.#inTransaction = true;
    try {
      const result = fn();
      this.#db.exec('COMMIT');
      return result;
    } catch (err) {
      // SQLite rolls back by itself after some errors (a full disk, an I/O error): the error to report is the first one
      try {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      } catch {
        // the first error is the one to report; the connection ends the transaction either way
      }
      throw err;
    } finally {
      this.#inTransaction = false;
    }
  }

  get inTransaction(): boolean {
    return this.#inTransaction;
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }
}

export function openDatabase(path: string): Database {
  let raw: DatabaseSync;
  try {
    raw = new DatabaseSync(path, { timeout: STORE_BUSY_TIMEOUT_MS, enableForeignKeyConstraints: true });
    raw.exec('PRAGMA journal_mode = WAL');
    raw.exec('PRAGMA synchronous = FULL');
  } catch (err) {
    throw new StoreError(`cannot open the host store ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const db = new Database(raw);
  try {
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

export function schemaVersion(db: Database): number {
  return db.get<{ user_version: number }>('PRAGMA user_version')?.user_version ?? 0;
}

function migrate(db: Database): void {
  db.transaction(() => {
    const current = schemaVersion(db);
    if (current > SCHEMA_VERSION) {
      throw new StoreError(`the host store has schema version ${current}, newer than this agentmbx (${SCHEMA_VERSION}): upgrade agentmbx`);
    }
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      db.exec(`PRAGMA user_version = ${m.version}`);
    }
  });
}
