// The PostgreSQL RelayStore: a pool of connections, one per running read or transaction, so several
// relay processes (on one machine or many) share one database. Each transaction is one PostgreSQL
// transaction at READ COMMITTED; what SQLite gets from running transactions one at a time, this
// store gets from locks that live in the server (locks.ts: per target and per account; items.ts:
// the seq row), so it holds across processes. A read is one REPEATABLE READ, READ ONLY snapshot.
//
// Durability: every connection runs synchronous_commit=on, so COMMIT returns only once the commit
// record is flushed to the server's WAL; a transaction's promise resolves only after COMMIT returned.
// The store does no group commit of its own: PostgreSQL flushes the WAL of concurrent commits
// together (each backend waiting on the flush finds its record already written by another's).
//
// A transaction that lost a deadlock or a serialization check (SQLSTATE 40P01, 40001) is rolled back
// by the server; the store runs its fn again from the start, up to MAX_TRANSACTION_ATTEMPTS times.
// fn must therefore do nothing outside the store that it cannot do twice (the core's fns only read
// and write through the transactor and compute).
import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';
import { StoreClosedError, StoreOverloadedError, TransactionMisuseError, type StoreDiskError } from '../errors.ts';
import type { RelayReader, RelayStore, RelayTransactor } from '../relay-store.ts';
import { guardClient, relayReader, relayTransactor } from './relay-tx.ts';
import { sqlState } from './sql.ts';

/** Reads and transactions waiting for a connection or running; beyond this the store refuses new ones (StoreOverloadedError). */
export const MAX_PENDING_TRANSACTIONS = 10_000;
/** Runs of one transaction's fn at most, when the server aborts it as a deadlock or serialization victim. */
export const MAX_TRANSACTION_ATTEMPTS = 5;
/** SQLSTATEs after which the whole transaction may simply run again. */
const RETRYABLE_STATES = new Set(['40001', '40P01']);

/** Set while a fn runs, so that a nested store.transaction fails instead of waiting for a connection forever. */
const runningFn = new AsyncLocalStorage<{ ended: boolean }>();

export class PostgresRelayStore implements RelayStore {
  /** the database, for messages (no password) */
  readonly where: string;
  readonly #pool: pg.Pool;
  /** reads and transactions started and not yet settled (waiting for a connection or running) */
  #open = 0;
  #closed = false;
  readonly #releaseLock: () => Promise<void>;

  /** `releaseLock` drops the store lock (open-store.ts) once the pool has closed. */
  constructor(pool: pg.Pool, where: string, releaseLock: () => Promise<void>) {
    this.#pool = pool;
    this.where = where;
    this.#releaseLock = releaseLock;
  }

  transaction<T>(fn: (tx: RelayTransactor) => Promise<T>): Promise<T> {
    return this.#run(async (client, connection) => {
      for (let attempt = 1; ; attempt += 1) {
        await client.query('BEGIN');
        try {
          const value = await this.#runFn(client, (use) => fn(relayTransactor(use, this.where)));
          await client.query('COMMIT');
          return value;
        } catch (error) {
          await rollBack(client, connection);
          if (attempt >= MAX_TRANSACTION_ATTEMPTS || !RETRYABLE_STATES.has(sqlState(error) ?? '')) throw error;
        }
      }
    });
  }

  read<T>(fn: (reader: RelayReader) => Promise<T>): Promise<T> {
    return this.#run(async (client, connection) => {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      try {
        const value = await this.#runFn(client, (use) => fn(relayReader(use, this.where)));
        await client.query('COMMIT');
        return value;
      } catch (error) {
        await rollBack(client, connection);
        throw error;
      }
    });
  }

  /** The server's disk is the server's to watch: a write it refuses fails with its own error. */
  diskFault(): StoreDiskError | null {
    return null;
  }

  async close(): Promise<void> {
    this.#closed = true;
    // waits for the connections still checked out, so reads and transactions in flight finish
    await this.#pool.end();
    await this.#releaseLock();
  }

  async #run<T>(body: (client: pg.PoolClient, connection: Connection) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreClosedError();
    const current = runningFn.getStore();
    if (current !== undefined && !current.ended) {
      throw new TransactionMisuseError('a relay store transaction was started inside another one (it would wait for itself)');
    }
    if (this.#open >= MAX_PENDING_TRANSACTIONS) throw new StoreOverloadedError();
    this.#open += 1;
    let client: pg.PoolClient | null = null;
    const connection: Connection = { broken: false };
    try {
      client = await this.#pool.connect();
      return await body(client, connection);
    } finally {
      // a connection whose ROLLBACK failed is closed instead of going back to the pool
      client?.release(connection.broken);
      this.#open -= 1;
    }
  }

  async #runFn<T>(client: pg.PoolClient, fn: (use: ReturnType<typeof guardClient>['use']) => Promise<T>): Promise<T> {
    const guard = guardClient(client);
    const state = { ended: false };
    try {
      return await runningFn.run(state, () => fn(guard.use));
    } finally {
      state.ended = true;
      guard.end();
    }
  }
}

interface Connection {
  /** set when the connection must not be reused */
  broken: boolean;
}

/** Rolls back after a failure; a ROLLBACK that fails too (a lost connection) marks the connection broken, and the first error stands. */
async function rollBack(client: pg.PoolClient, connection: Connection): Promise<void> {
  try {
    await client.query('ROLLBACK');
  } catch {
    connection.broken = true;
  }
}
