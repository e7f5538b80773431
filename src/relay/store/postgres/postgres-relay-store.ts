// The PostgreSQL RelayStore, for several relay processes (on one machine or many) on one database.
//
// Writes: each process runs its transactions in FIFO order on one connection at a time, grouped
// like SQLite's by the shared runner (../sql/group-runner.ts, group commit): the transactions
// queued when a group starts share one PostgreSQL transaction, each inside its own SAVEPOINT (so
// each stays all-or-nothing; group-engine.ts), and all settle after the one COMMIT. Grouping
// matters more here than on SQLite: a push holds its target's locks (locks.ts, and the seq row of
// items.ts) until COMMIT returns, so pushes to one target commit one transaction after the other,
// and a group turns N of them into one commit. Across processes the same locks, which live in the
// server, order the groups.
//
// Durability: every connection runs synchronous_commit=on, so COMMIT returns only once the commit
// record is flushed to the server's WAL; no transaction settles before that (no after-commit step).
//
// Reads run side by side on the pool, each one REPEATABLE READ, READ ONLY snapshot (a lookup: one
// statement on its own, without BEGIN/COMMIT), never on the writer's connection, and in the order
// of their priority (read-slots.ts).
import type pg from 'pg';
import type { StoreDiskError } from '../errors.ts';
import type { GroupCommitPolicy } from '../group-commit-policy.ts';
import type { StoreLock } from './store-lock.ts';
import type { ReadPriority, RelayReader, RelayStore, RelayTransactor } from '../relay-store.ts';
import type { ReadSlots } from './read-slots.ts';
import { GroupRunner, runGuarded } from '../sql/group-runner.ts';
import { postgresGroupEngine, type PostgresWork } from './group-engine.ts';
import { pooledClient } from './pool-client.ts';
import { relayReader } from './relay-tx.ts';
import { finish, oneStatement, sqlOver, type Traffic } from './sql.ts';

export class PostgresRelayStore implements RelayStore {
  /** the database, for messages (no password) */
  readonly where: string;
  readonly #pool: pg.Pool;
  readonly #readSlots: ReadSlots;
  readonly #lock: StoreLock;
  readonly #runner: GroupRunner<PostgresWork>;
  /** reads running or waiting for a connection */
  #reads = 0;
  #readsDone: (() => void) | null = null;
  #closing: Promise<void> | null = null;
  /** what this store's connections sent so far (traffic()) */
  readonly #traffic: Traffic = { statements: 0, writes: 0 };

  /** `lock` is the store lock (store-lock.ts), ended once the pool has closed; `onGroupCommit` hears of every COMMIT of a group (metrics). */
  constructor(
    pool: pg.Pool,
    readSlots: ReadSlots,
    where: string,
    policy: GroupCommitPolicy,
    lock: StoreLock,
    onGroupCommit?: (size: number, latencyMs: number) => void,
  ) {
    this.#pool = pool;
    this.#readSlots = readSlots;
    this.where = where;
    this.#lock = lock;
    this.#runner = new GroupRunner<PostgresWork>({
      engine: postgresGroupEngine(pool, where, this.#traffic),
      // a group takes what is queued when it starts, up to group_commit_max_items
      gathering: { beforeBegin: true, joins: (state, size) => state.waiting > 0 && size < Math.max(1, policy.maxItems) },
      nowMs: () => performance.now(),
      onGroupCommit,
      pendingReads: () => this.#reads,
      refusal: () => this.#lock.refusal(),
    });
  }

  transaction<T>(fn: (tx: RelayTransactor) => Promise<T>): Promise<T> {
    return this.#runner.transaction<T>(fn);
  }

  read<T>(fn: (reader: RelayReader) => Promise<T>, priority: ReadPriority = 'ordinary'): Promise<T> {
    return this.#read(fn, priority, 'snapshot');
  }

  lookup<T>(fn: (reader: RelayReader) => Promise<T>, priority: ReadPriority = 'ordinary'): Promise<T> {
    return this.#read(fn, priority, 'one statement');
  }

  /** A read on a pooled connection: in a REPEATABLE READ, READ ONLY transaction, or one statement on its own (autocommit). */
  async #read<T>(fn: (reader: RelayReader) => Promise<T>, priority: ReadPriority, how: 'snapshot' | 'one statement'): Promise<T> {
    const refusal = this.#runner.refusal();
    if (refusal !== null) throw refusal;
    this.#reads += 1;
    let slot: (() => void) | null = null;
    let client: pg.PoolClient | null = null;
    // a connection that failed before its transaction ended cleanly is closed, not pooled again
    let broken = true;
    try {
      slot = await this.#readSlots.take(priority);
      client = await pooledClient(this.#pool);
      const sql = sqlOver(client, this.#traffic);
      if (how === 'one statement') {
        const outcome = await runGuarded(
          oneStatement(sql),
          (use) => fn(relayReader(use, this.where)),
          () => sql.settleSent(),
        );
        // no transaction to end: a statement that failed leaves the session as it was, a lost connection fails the next
        broken = !outcome.ok;
        if (!outcome.ok) throw outcome.error;
        return outcome.value as T;
      }
      // the snapshot's BEGIN rides with the read's first statement; a read it failed under is not answered
      const begun = sql.sendAhead('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const outcome = await runGuarded(
        sql,
        (use) => fn(relayReader(use, this.where)),
        () => sql.settleSent(),
      );
      await begun;
      broken = !(await finish(sql, outcome.ok ? 'COMMIT' : 'ROLLBACK'));
      if (!outcome.ok) throw outcome.error;
      return outcome.value as T;
    } finally {
      client?.release(broken);
      slot?.();
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
      await this.#runner.close();
      if (this.#reads > 0)
        await new Promise<void>((resolve) => {
          this.#readsDone = resolve;
        });
      await this.#pool.end();
      await this.#lock.end();
    })();
    return this.#closing;
  }
}
