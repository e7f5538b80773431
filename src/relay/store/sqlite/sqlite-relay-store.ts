// The SQLite RelayStore: one writer connection and one reader connection (WAL lets the reader see
// the last commit while a write is open). Writes go through the shared group runner
// (../sql/group-runner.ts): writes queued together share one commit (when a group closes:
// group-commit.ts), each inside its own SAVEPOINT (group-engine.ts), and every one of them settles
// only after the shared COMMIT and the WAL sync that follows it (wal-sync.ts, the runner's
// after-commit step), so a write's promise resolves only once it is durable; the next groups are
// committed while that sync runs on the thread pool. Reads (store.read) run one at a
// time from their own queue on the reader, so they never wait for a write group and never see what
// a group has not committed.
//
// Shared by several relay processes (`relay serve --workers N`), each process group-commits its own
// writes: a group is gathered before it takes SQLite's write lock, so that the lock is held only
// while its members run and COMMIT, never across event-loop turns or a WAL sync, and a process that
// finds the lock taken waits for it on timers instead of SQLite's blocking busy handler.
import type { DatabaseSync, SQLTagStore } from 'node:sqlite';
import { freeBytes } from '../../../common/disk-fault.ts';
import type { RelayReader, RelayStore, RelayTransactor } from '../relay-store.ts';
import { StoreDiskError } from '../errors.ts';
import { storeDiskError } from './disk-errors.ts';
import { DEFAULT_GROUP_COMMIT, type GroupCommitPolicy } from '../group-commit-policy.ts';
import { GroupRunner, runGuarded, type GroupCounts, type Outcome } from '../sql/group-runner.ts';
import type { UseSql } from './use-sql.ts';
import { policyGathering, SYSTEM_SCHEDULER, type GroupScheduler } from './group-commit.ts';
import { sqliteGroupEngine, type SqliteWork } from './group-engine.ts';
import { relayReader, relayTransactor } from './relay-tx.ts';
import type { WalSyncer } from './wal-sync.ts';

/**
 * A full disk counts as healed only once this much is free again: a small write (a heartbeat) can fit
 * in the room a refused large one left, and the state must not flap with every request.
 */
export const FULL_DISK_HEALED_AT_BYTES = 1024 * 1024;
/** Prepared statements kept by the tag store (the code has far fewer distinct ones). */
export const STATEMENT_CACHE_SIZE = 200;

/** A read waiting for the reader: the caller's fn, handed a reader over the guarded statement handle. */
interface ReadJob {
  run: (use: UseSql) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface SqliteRelayStoreOptions {
  /** makes the writer's commits durable; required because the writer runs synchronous=NORMAL */
  walSyncer: WalSyncer;
  groupCommit?: GroupCommitPolicy;
  scheduler?: GroupScheduler;
  /** told after every durable COMMIT of a write group: how many transactions it held, how long from its start to its sync */
  onGroupCommit?: (size: number, latencyMs: number) => void;
  /**
   * whether requests that will write are still being identified (their callers looked up and hop
   * signatures checked, which the store cannot see): a busy group that ran dry lingers for them
   */
  writersPending?: () => boolean;
  /** told once each time the disk's state changes: the fault that now refuses writes, or null when a write is durable again */
  onDiskState?: (fault: StoreDiskError | null) => void;
  /** told for every transaction refused because of the disk (for a metric) */
  onDiskRefusal?: (fault: StoreDiskError) => void;
  /**
   * other processes write to the same file (`relay serve --workers N`): gather each group before
   * taking the write lock and wait for that lock on timers (the writer's busy timeout must be 0)
   */
  sharedWriters?: boolean;
}

/** Counters of the write path since the store opened (reads are not counted). */
export interface GroupCommitStats extends GroupCounts {
  /** WAL syncs; each makes every group committed before it durable */
  syncs: number;
}

export class SqliteRelayStore implements RelayStore {
  /** the store directory, for messages */
  readonly dir: string;
  readonly #db: DatabaseSync;
  readonly #reader: DatabaseSync;
  readonly #readerSql: SQLTagStore;
  readonly #runner: GroupRunner<SqliteWork>;
  readonly #readQueue: ReadJob[] = [];
  readonly #walSyncer: WalSyncer;
  #syncs = 0;
  #readDraining: Promise<void> | null = null;
  readonly #onDiskState: ((fault: StoreDiskError | null) => void) | undefined;
  readonly #onDiskRefusal: ((fault: StoreDiskError) => void) | undefined;
  /** the disk fault that refused the last write, until a write is durable again (a failed sync stays) */
  #diskFault: StoreDiskError | null = null;

  /** `reader` is a second connection to the same file, with query_only on. */
  constructor(db: DatabaseSync, reader: DatabaseSync, dir: string, options: SqliteRelayStoreOptions) {
    this.#db = db;
    this.#reader = reader;
    this.dir = dir;
    this.#readerSql = reader.createTagStore(STATEMENT_CACHE_SIZE);
    this.#walSyncer = options.walSyncer;
    this.#onDiskState = options.onDiskState;
    this.#onDiskRefusal = options.onDiskRefusal;
    const scheduler = options.scheduler ?? SYSTEM_SCHEDULER;
    const sharedWriters = options.sharedWriters === true;
    this.#runner = new GroupRunner<SqliteWork>({
      engine: sqliteGroupEngine(db, db.createTagStore(STATEMENT_CACHE_SIZE), sharedWriters),
      gathering: policyGathering(options.groupCommit ?? DEFAULT_GROUP_COMMIT, scheduler, options.writersPending ?? (() => false), sharedWriters),
      nowMs: scheduler.nowMs,
      afterCommit: {
        run: async () => {
          try {
            await this.#walSyncer.sync();
          } catch (error) {
            throw new StoreDiskError('sync', this.dir, { cause: error });
          }
          this.#syncs += 1;
        },
        done: () => {
          if (this.#diskFault !== null && this.#diskHealed()) this.#noteDisk(null);
        },
      },
      onGroupCommit: options.onGroupCommit,
      pendingReads: () => this.#readQueue.length,
      errorOf: (error) => this.#refusal(error),
    });
  }

  transaction<T>(fn: (tx: RelayTransactor) => Promise<T>): Promise<T> {
    return this.#runner.transaction<T>((use) => fn(relayTransactor(use, this.#where)));
  }

  read<T>(fn: (reader: RelayReader) => Promise<T>): Promise<T> {
    const refusal = this.#runner.refusal();
    if (refusal !== null) return Promise.reject(refusal);
    return new Promise<T>((resolve, reject) => {
      this.#readQueue.push({ run: (use) => fn(relayReader(use, this.#where)), resolve: resolve as (value: unknown) => void, reject });
      this.#readDraining ??= this.#drainReads();
    });
  }

  /** One statement is a snapshot on its own, and a SQLite read costs no round trip: the same as read. */
  lookup<T>(fn: (reader: RelayReader) => Promise<T>): Promise<T> {
    return this.read(fn);
  }

  get #where(): string {
    return `the relay store in ${this.dir}`;
  }

  /** The write path's counters (for metrics and tests). */
  groupStats(): GroupCommitStats {
    return { ...this.#runner.counts(), syncs: this.#syncs };
  }

  /**
   * The writer's durability settings as SQLite reports them, and whether the store syncs the WAL
   * itself before settling a write (for operators and tests).
   */
  connectionSettings(): { journalMode: string; synchronous: string; walSyncedBeforeSettle: boolean; busyTimeoutMs: number } {
    const value = (pragma: string): unknown => Object.values(this.#db.prepare(`PRAGMA ${pragma}`).get() ?? {})[0];
    const synchronous = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][Number(value('synchronous'))] ?? 'unknown';
    return { journalMode: String(value('journal_mode')), synchronous, walSyncedBeforeSettle: true, busyTimeoutMs: Number(value('busy_timeout')) };
  }

  async close(): Promise<void> {
    await Promise.all([this.#runner.close(), this.#readDraining]);
    await this.#walSyncer.close();
    if (this.#reader.isOpen) this.#reader.close();
    if (this.#db.isOpen) this.#db.close();
  }

  async #drainReads(): Promise<void> {
    for (let job = this.#readQueue.shift(); job !== undefined; job = this.#readQueue.shift()) await this.#runRead(job);
    this.#readDraining = null;
  }

  /** A read on the reader: one snapshot of the last commit, writes refused by query_only. */
  async #runRead(job: ReadJob): Promise<void> {
    let outcome: Outcome;
    try {
      this.#reader.exec('BEGIN');
      outcome = await runGuarded(this.#readerSql, job.run);
      this.#reader.exec(outcome.ok ? 'COMMIT' : 'ROLLBACK');
    } catch (error) {
      outcome = { ok: false, error };
      if (this.#reader.isTransaction) this.#reader.exec('ROLLBACK');
    }
    if (outcome.ok) job.resolve(outcome.value);
    else job.reject(this.#refusal(outcome.error));
  }

  /** What a caller is told: a failure the disk caused becomes a StoreDiskError, is counted and may change the disk state. */
  #refusal(error: unknown): unknown {
    const fault = storeDiskError(error, this.dir);
    if (fault === null) return error;
    this.#onDiskRefusal?.(fault);
    this.#noteDisk(fault);
    return fault;
  }

  /** The disk fault refusing writes now, or null (for /healthz). */
  diskFault(): StoreDiskError | null {
    return this.#diskFault;
  }

  /** Always: the writer lock file already makes one process (the lone relay, a group's primary) the only one that asks. */
  housekeeping(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Always, for the same reason. */
  servesAlone(): Promise<boolean> {
    return Promise.resolve(true);
  }

  #diskHealed(): boolean {
    return this.#diskFault?.fault !== 'full' || (freeBytes(this.dir) ?? 0) >= FULL_DISK_HEALED_AT_BYTES;
  }

  /** Tells onDiskState when the fault changes kind or ends; a failed sync is never cleared. */
  #noteDisk(fault: StoreDiskError | null): void {
    if (this.#diskFault?.fault === 'sync' || this.#diskFault?.fault === fault?.fault) return;
    this.#diskFault = fault;
    this.#onDiskState?.(fault);
  }
}
