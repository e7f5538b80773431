// The PostgreSQL RelayStore, for several relay processes (on one machine or many) on one database.
//
// Writes: each process runs its transactions in FIFO order on one connection at a time, grouped
// like SQLite's (group commit): the transactions queued when a group starts share one PostgreSQL
// transaction, each inside its own SAVEPOINT (so each stays all-or-nothing), and all settle after
// the one COMMIT. Grouping matters more here than on SQLite: a push holds its target's locks
// (locks.ts, and the seq row of items.ts) until COMMIT returns, so pushes to one target commit one
// transaction after the other, and a group turns N of them into one commit. Across processes the
// same locks, which live in the server, order the groups.
//
// Durability: every connection runs synchronous_commit=on, so COMMIT returns only once the commit
// record is flushed to the server's WAL; no transaction settles before that.
//
// Reads run side by side on the pool, each one REPEATABLE READ, READ ONLY snapshot.
//
// A member that lost a deadlock (SQLSTATE 40P01: two groups taking two targets' locks in opposite
// orders) or a serialization check (40001) is rolled back to its savepoint, which frees the locks
// it took, and runs again from the start in the next group, up to MAX_TRANSACTION_ATTEMPTS times.
// fn must therefore do nothing outside the store that it cannot do twice (the core's fns only read
// and write through the transactor and compute).
import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';
import { StoreClosedError, StoreOverloadedError, TransactionMisuseError, type StoreDiskError } from '../errors.ts';
import type { GroupCommitPolicy } from '../group-commit-policy.ts';
import type { StoreLock } from './store-lock.ts';
import type { RelayReader, RelayStore, RelayTransactor } from '../relay-store.ts';
import { transactionLocks } from './locks.ts';
import { guardUse } from '../guard.ts';
import { relayReader, relayTransactor } from './relay-tx.ts';
import { sqlOver, sqlState, type Sql, type Traffic, type UsePg } from './sql.ts';

/** Reads and transactions waiting or running; beyond this the store refuses new ones (StoreOverloadedError). */
export const MAX_PENDING_TRANSACTIONS = 10_000;
/** Runs of one transaction's fn at most, when the server picks it as a deadlock or serialization victim. */
export const MAX_TRANSACTION_ATTEMPTS = 5;
/**
 * Locks a group may hold before it takes no more members: each target or account lock is a slot
 * in the server's lock table, which all connections share (max_locks_per_transaction × connections,
 * 6,400 by default). One member stays below MAX_LOCKS_PER_TRANSACTION.
 */
export const GROUP_LOCK_BUDGET = 1_000;
/** SQLSTATEs after which a member may simply run again. */
const RETRYABLE_STATES = new Set(['40001', '40P01']);

/** Set while a fn runs, so that a nested store.transaction fails instead of waiting for itself. */
const runningFn = new AsyncLocalStorage<{ ended: boolean }>();

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Job {
  fn: (tx: RelayTransactor) => Promise<unknown>;
  attempts: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class PostgresRelayStore implements RelayStore {
  /** the database, for messages (no password) */
  readonly where: string;
  readonly #pool: pg.Pool;
  readonly #policy: GroupCommitPolicy;
  readonly #lock: StoreLock;
  readonly #queue: Job[] = [];
  #writing: Promise<void> | null = null;
  /** reads running or waiting for a connection */
  #reads = 0;
  #readsDone: (() => void) | null = null;
  #closing: Promise<void> | null = null;
  /** what this store's connections sent so far (traffic()) */
  readonly #traffic: Traffic = { statements: 0, writes: 0 };

  readonly #onGroupCommit: ((size: number, latencyMs: number) => void) | undefined;

  /** `lock` is the store lock (store-lock.ts), ended once the pool has closed; `onGroupCommit` hears of every COMMIT of a group (metrics). */
  constructor(pool: pg.Pool, where: string, policy: GroupCommitPolicy, lock: StoreLock, onGroupCommit?: (size: number, latencyMs: number) => void) {
    this.#pool = pool;
    this.where = where;
    this.#policy = policy;
    this.#lock = lock;
    this.#onGroupCommit = onGroupCommit;
  }

  transaction<T>(fn: (tx: RelayTransactor) => Promise<T>): Promise<T> {
    const refusal = this.#refusal();
    if (refusal !== null) return Promise.reject(refusal);
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ fn, attempts: 0, resolve: resolve as (value: unknown) => void, reject });
      this.#writing ??= this.#drain();
    });
  }

  async read<T>(fn: (reader: RelayReader) => Promise<T>): Promise<T> {
    const refusal = this.#refusal();
    if (refusal !== null) throw refusal;
    this.#reads += 1;
    let client: pg.PoolClient | null = null;
    // a connection that failed before its transaction ended cleanly is closed, not pooled again
    let broken = true;
    try {
      client = await this.#pool.connect();
      const sql = sqlOver(client, this.#traffic);
      // the snapshot's BEGIN rides with the read's first statement; a read it failed under is not answered
      const begun = sql.sendAhead('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const outcome = await runFn(sql, (use) => fn(relayReader(use, this.where)));
      await begun;
      broken = !await finish(sql, outcome.ok ? 'COMMIT' : 'ROLLBACK');
      if (!outcome.ok) throw outcome.error;
      return outcome.value as T;
    } finally {
      client?.release(broken);
      this.#reads -= 1;
      if (this.#reads === 0) this.#readsDone?.();
    }
  }

  /** Statements and socket writes this store sent so far (the push path's round trips are measured with it). */
  traffic(): Traffic {
    return { ...this.#traffic };
  }

  /** The server's disk is the server's to watch: a write it refuses fails with the server's error. */
  diskFault(): StoreDiskError | null {
    return null;
  }

  /** The housekeeping lease (store-lock.ts): one process on the database at a time. */
  housekeeping(): Promise<boolean> {
    return this.#lock.housekeeping();
  }

  /** Whether no other process holds the store lock (store-lock.ts). */
  servesAlone(): Promise<boolean> {
    return this.#lock.alone();
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // what was asked before close finishes, then the pool ends
      await this.#writing;
      if (this.#reads > 0) await new Promise<void>((resolve) => { this.#readsDone = resolve; });
      await this.#pool.end();
      await this.#lock.end();
    })();
    return this.#closing;
  }

  #refusal(): Error | null {
    if (this.#closing !== null) return new StoreClosedError();
    const lockLost = this.#lock.refusal();
    if (lockLost !== null) return lockLost;
    const current = runningFn.getStore();
    if (current !== undefined && !current.ended) {
      return new TransactionMisuseError('a relay store transaction was started inside another one (it would wait for itself)');
    }
    if (this.#queue.length + this.#reads >= MAX_PENDING_TRANSACTIONS) return new StoreOverloadedError();
    return null;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) await this.#runGroup(this.#queue.splice(0, Math.max(1, this.#policy.maxItems)));
    this.#writing = null;
  }

  /** One group: BEGIN, each member in its own savepoint, one COMMIT, then every member settles. */
  async #runGroup(jobs: Job[]): Promise<void> {
    const settled: Array<{ job: Job; outcome: Outcome }> = [];
    const again: Job[] = [];
    const openedAt = performance.now();
    let failure: { error: unknown } | null = null;
    let client: pg.PoolClient | null = null;
    let sql: Sql | null = null;
    let broken = false;
    try {
      client = await this.#pool.connect();
      const member = sqlOver(client, this.#traffic);
      sql = member;
      // awaited alone: were it to fail, no member's statement may run outside a transaction
      await member.exec('BEGIN');
      const locks = transactionLocks(member);
      // each member's savepoint rides with its first statement; none after a failed member: the
      // savepoint it was rolled back to is still there for the next one
      let opening = ['SAVEPOINT member'];
      for (const [index, job] of jobs.entries()) {
        if (locks.held() >= GROUP_LOCK_BUDGET) {
          // the rest wait for the next group: the server's lock table is shared by every connection
          again.push(...jobs.slice(index));
          break;
        }
        const opened = Promise.all(opening.map((text) => member.sendAhead(text)));
        const before = locks.held();
        job.attempts += 1;
        const outcome = await runFn(member, (use) => job.fn(relayTransactor(use, this.where, locks)));
        // a savepoint statement that failed fails the group: which member's work it covers is in doubt
        await opened;
        if (outcome.ok) {
          opening = ['RELEASE SAVEPOINT member', 'SAVEPOINT member'];
        } else {
          // undoes the member, and frees the locks it took (they belong to its savepoint)
          await member.exec('ROLLBACK TO SAVEPOINT member');
          opening = [];
          locks.forgetSince(before);
          if (RETRYABLE_STATES.has(sqlState(outcome.error) ?? '') && job.attempts < MAX_TRANSACTION_ATTEMPTS) {
            again.push(job);
            continue;
          }
        }
        settled.push({ job, outcome });
      }
      // a transaction the server had aborted answers COMMIT with ROLLBACK, not an error
      if (await member.exec('COMMIT') !== 'COMMIT') throw new Error('the relay store group transaction was rolled back by the server');
    } catch (error) {
      failure = { error };
      broken = sql !== null && !await finish(sql, 'ROLLBACK');
    } finally {
      client?.release(broken);
    }
    if (failure === null) {
      this.#onGroupCommit?.(settled.length, performance.now() - openedAt);
      // the deadlock victims go first in the next group, in their order
      this.#queue.unshift(...again);
      for (const { job, outcome } of settled) settle(job, outcome);
      return;
    }
    const unsettled = jobs.filter((job) => !settled.some((done) => done.job === job));
    // a member that failed on its own keeps its own error; the others share the group's fate
    for (const { job, outcome } of settled) settle(job, outcome.ok ? { ok: false, error: failure.error } : outcome);
    for (const job of unsettled) settle(job, { ok: false, error: failure.error });
  }
}

function settle(job: Job, outcome: Outcome): void {
  if (outcome.ok) job.resolve(outcome.value);
  else job.reject(outcome.error);
}

/** Runs fn with a guarded view of the connection that refuses use once fn ended. */
async function runFn<T>(sql: Sql, fn: (use: UsePg) => Promise<T>): Promise<Outcome> {
  const guard = guardUse(sql);
  const state = { ended: false };
  try {
    const value = await runningFn.run(state, () => fn(guard.use));
    // a lock fn took last, with no statement awaited after it, still fails fn
    await sql.settleSent();
    return { ok: true, value };
  } catch (error) {
    await sql.settleSent().catch(() => {});
    return { ok: false, error };
  } finally {
    state.ended = true;
    guard.end();
  }
}

/** Ends the transaction; false when that failed (a lost connection, which is then not reused). */
async function finish(sql: Sql, how: 'COMMIT' | 'ROLLBACK'): Promise<boolean> {
  try {
    await sql.exec(how);
    return true;
  } catch {
    return false;
  }
}

