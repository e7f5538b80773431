// The SQLite RelayStore: one connection, one writer, transactions run one at a time from a FIFO
// queue. Commit is synchronous=FULL, so a transaction's promise resolves only once it is durable.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DatabaseSync, SQLTagStore } from 'node:sqlite';
import type { RelayStore, RelayTx, TransactionOptions } from '../relay-store.ts';
import { StoreClosedError, StoreOverloadedError, TransactionMisuseError } from './errors.ts';
import { openRelayTx } from './relay-tx.ts';

/** Transactions waiting for their turn; beyond this the store refuses new ones (StoreOverloadedError). */
export const MAX_QUEUED_TRANSACTIONS = 10_000;
/** Prepared statements kept by the tag store (the code has far fewer distinct ones). */
export const STATEMENT_CACHE_SIZE = 200;

interface Job {
  fn: (tx: RelayTx) => Promise<unknown>;
  readOnly: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Set while a job's fn runs, so that a nested store.transaction fails instead of waiting for itself. */
const runningJob = new AsyncLocalStorage<{ ended: boolean }>();

export class SqliteRelayStore implements RelayStore {
  /** the store directory, for messages */
  readonly dir: string;
  readonly #db: DatabaseSync;
  readonly #sql: SQLTagStore;
  readonly #queue: Job[] = [];
  #draining: Promise<void> | null = null;
  #closed = false;

  constructor(db: DatabaseSync, dir: string) {
    this.#db = db;
    this.dir = dir;
    this.#sql = db.createTagStore(STATEMENT_CACHE_SIZE);
  }

  transaction<T>(fn: (tx: RelayTx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreClosedError());
    const current = runningJob.getStore();
    if (current !== undefined && !current.ended) {
      return Promise.reject(new TransactionMisuseError('a relay store transaction was started inside another one (it would wait for itself)'));
    }
    if (this.#queue.length >= MAX_QUEUED_TRANSACTIONS) return Promise.reject(new StoreOverloadedError());
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ fn, readOnly: options.readOnly === true, resolve: resolve as (value: unknown) => void, reject });
      this.#draining ??= this.#drain();
    });
  }

  /** The connection's durability settings as SQLite reports them (for operators and tests). */
  connectionSettings(): { journalMode: string; synchronous: string; busyTimeoutMs: number } {
    const value = (pragma: string): unknown => Object.values(this.#db.prepare(`PRAGMA ${pragma}`).get() ?? {})[0];
    const synchronous = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][Number(value('synchronous'))] ?? 'unknown';
    return { journalMode: String(value('journal_mode')), synchronous, busyTimeoutMs: Number(value('busy_timeout')) };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#draining;
    if (this.#db.isOpen) this.#db.close();
  }

  async #drain(): Promise<void> {
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) {
      await this.#runTransaction(job);
    }
    this.#draining = null;
  }

  // One job per transaction today. Group commit fits this shape: take several queued jobs, BEGIN
  // once, run each through #runOne inside its own SAVEPOINT (RELEASE on success, ROLLBACK TO on
  // failure, so each stays all-or-nothing), COMMIT once, then settle every job after that commit.
  async #runTransaction(job: Job): Promise<void> {
    let outcome: Outcome;
    try {
      if (job.readOnly) this.#db.exec('PRAGMA query_only = ON');
      this.#db.exec(job.readOnly ? 'BEGIN' : 'BEGIN IMMEDIATE');
      outcome = await this.#runOne(job);
      if (outcome.ok) this.#db.exec('COMMIT');
    } catch (error) {
      outcome = { ok: false, error };
    }
    const cleanup = this.#cleanUp(outcome.ok, job.readOnly);
    if (!outcome.ok) job.reject(outcome.error);
    else if (cleanup !== null) job.reject(cleanup);
    else job.resolve(outcome.value);
  }

  /** Rolls back what is left of a failed transaction and leaves read-only mode; returns the error if that failed, else null. */
  #cleanUp(committed: boolean, readOnly: boolean): unknown {
    try {
      // SQLite may already have rolled back on its own (for example after SQLITE_FULL)
      if (!committed && this.#db.isTransaction) this.#db.exec('ROLLBACK');
      if (readOnly) this.#db.exec('PRAGMA query_only = OFF');
      return null;
    } catch (error) {
      return error;
    }
  }

  async #runOne(job: Job): Promise<Outcome> {
    const { tx, end } = openRelayTx(this.#sql, `the relay store in ${this.dir}`);
    const state = { ended: false };
    try {
      return { ok: true, value: await runningJob.run(state, () => job.fn(tx)) };
    } catch (error) {
      return { ok: false, error };
    } finally {
      state.ended = true;
      end();
    }
  }
}
