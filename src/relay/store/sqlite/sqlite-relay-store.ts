// The SQLite RelayStore: one writer connection and one reader connection (WAL lets the reader see
// the last commit while a write is open). Writes are taken from a FIFO queue; writes queued together
// share one commit (group commit, see group-commit.ts): each runs inside its own SAVEPOINT, so each
// stays all-or-nothing, and every one of them settles only after the shared COMMIT and the WAL sync
// that follows it (wal-sync.ts), so a write's promise resolves only once it is durable; the next
// groups are committed while that sync runs on the thread pool. Reads (store.read) run one at a
// time from their own queue on the reader, so they never wait for a write group and never see what
// a group has not committed.
//
// Shared by several relay processes (`relay serve --workers N`), each process group-commits its own
// writes: a group is gathered before it takes SQLite's write lock, so that the lock is held only
// while its members run and COMMIT, never across event-loop turns or a WAL sync, and a process that
// finds the lock taken waits for it on timers instead of SQLite's blocking busy handler.
import { AsyncLocalStorage } from 'node:async_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseSync, SQLTagStore } from 'node:sqlite';
import { freeBytes, sqliteResultCode } from '../../../common/disk-fault.ts';
import type { RelayReader, RelayStore, RelayTransactor } from '../relay-store.ts';
import { StoreClosedError, StoreDiskError, StoreOverloadedError, TransactionMisuseError } from '../errors.ts';
import { storeDiskError } from './disk-errors.ts';
import { DEFAULT_GROUP_COMMIT, type GroupCommitPolicy } from '../group-commit-policy.ts';
import type { UseSql } from './use-sql.ts';
import { closesGroup, lingers, startsAtOnce, SYSTEM_SCHEDULER, type GroupScheduler, type QueueHead } from './group-commit.ts';
import { guardUse } from '../guard.ts';
import { relayReader, relayTransactor } from './relay-tx.ts';
import type { WalSyncer } from './wal-sync.ts';

/** Transactions waiting for their turn; beyond this the store refuses new ones (StoreOverloadedError). */
export const MAX_QUEUED_TRANSACTIONS = 10_000;
/**
 * A full disk counts as healed only once this much is free again: a small write (a heartbeat) can fit
 * in the room a refused large one left, and the state must not flap with every request.
 */
export const FULL_DISK_HEALED_AT_BYTES = 1024 * 1024;
/** Prepared statements kept by the tag store (the code has far fewer distinct ones). */
export const STATEMENT_CACHE_SIZE = 200;
/** How long a group of a shared store waits for another process to release SQLite's write lock before it fails. */
export const SHARED_WRITE_LOCK_WAIT_MS = 5_000;
/** Tries at the write lock on the next event-loop turn before a shared store waits a millisecond between tries. */
const WRITE_LOCK_QUICK_TRIES = 2;
const SQLITE_BUSY = 5;

interface Job {
  /** the caller's fn, handed a reader or a transactor over the guarded statement handle */
  run: (use: UseSql) => Promise<unknown>;
  readOnly: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Member {
  job: Job;
  outcome: Outcome;
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

/** Counters of the write path since the store opened. */
export interface GroupCommitStats {
  /** COMMITs of write groups (reads are not counted) */
  commits: number;
  /** write transactions that went through a group, committed or rolled back */
  transactions: number;
  /** members of the last write group */
  lastGroupSize: number;
  /** WAL syncs; each makes every group committed before it durable */
  syncs: number;
}

/** A committed group waiting for the WAL sync that makes it durable. */
interface CommittedGroup {
  members: Member[];
  openedAt: number;
}

/** Set while a job's fn runs, so that a nested store.transaction fails instead of waiting for itself. */
const runningJob = new AsyncLocalStorage<{ ended: boolean }>();

const SAVEPOINT = 'member';

export class SqliteRelayStore implements RelayStore {
  /** the store directory, for messages */
  readonly dir: string;
  readonly #db: DatabaseSync;
  readonly #sql: SQLTagStore;
  readonly #reader: DatabaseSync;
  readonly #readerSql: SQLTagStore;
  readonly #queue: Job[] = [];
  readonly #readQueue: Job[] = [];
  readonly #policy: GroupCommitPolicy;
  readonly #scheduler: GroupScheduler;
  readonly #onGroupCommit: ((size: number, latencyMs: number) => void) | undefined;
  readonly #stats: GroupCommitStats = { commits: 0, transactions: 0, lastGroupSize: 0, syncs: 0 };
  readonly #walSyncer: WalSyncer;
  /** committed, not yet synced: settled by the next sync that starts after their COMMIT */
  #unsynced: CommittedGroup[] = [];
  #syncing: Promise<void> | null = null;
  /** set while an open group waits for a write or for the running sync to end */
  #wakeGroup: (() => void) | null = null;
  /** a failed WAL sync: what was committed may not be on disk, so the store takes no more work */
  #syncFailure: { error: unknown } | null = null;
  #lastCommitAt: number | null = null;
  #draining: Promise<void> | null = null;
  #readDraining: Promise<void> | null = null;
  readonly #writersPending: () => boolean;
  readonly #onDiskState: ((fault: StoreDiskError | null) => void) | undefined;
  readonly #onDiskRefusal: ((fault: StoreDiskError) => void) | undefined;
  readonly #sharedWriters: boolean;
  /** the disk fault that refused the last write, until a write is durable again (a failed sync stays) */
  #diskFault: StoreDiskError | null = null;
  #closed = false;

  /** `reader` is a second connection to the same file, with query_only on. */
  constructor(db: DatabaseSync, reader: DatabaseSync, dir: string, options: SqliteRelayStoreOptions) {
    this.#db = db;
    this.#reader = reader;
    this.dir = dir;
    this.#sql = db.createTagStore(STATEMENT_CACHE_SIZE);
    this.#readerSql = reader.createTagStore(STATEMENT_CACHE_SIZE);
    this.#policy = options.groupCommit ?? DEFAULT_GROUP_COMMIT;
    this.#scheduler = options.scheduler ?? SYSTEM_SCHEDULER;
    this.#onGroupCommit = options.onGroupCommit;
    this.#walSyncer = options.walSyncer;
    this.#writersPending = options.writersPending ?? (() => false);
    this.#onDiskState = options.onDiskState;
    this.#onDiskRefusal = options.onDiskRefusal;
    this.#sharedWriters = options.sharedWriters === true;
  }

  transaction<T>(fn: (tx: RelayTransactor) => Promise<T>): Promise<T> {
    return this.#enqueue((use) => fn(relayTransactor(use, this.#where)), false);
  }

  read<T>(fn: (reader: RelayReader) => Promise<T>): Promise<T> {
    return this.#enqueue((use) => fn(relayReader(use, this.#where)), true);
  }

  get #where(): string {
    return `the relay store in ${this.dir}`;
  }

  #enqueue<T>(run: (use: UseSql) => Promise<T>, readOnly: boolean): Promise<T> {
    // after a failed sync even reads are refused: they could hand out items that never reached the disk
    if (this.#syncFailure !== null) return Promise.reject(this.#refusal(this.#syncFailure.error));
    if (this.#closed) return Promise.reject(new StoreClosedError());
    const current = runningJob.getStore();
    if (current !== undefined && !current.ended) {
      return Promise.reject(new TransactionMisuseError('a relay store transaction was started inside another one (it would wait for itself)'));
    }
    if (this.#queue.length + this.#readQueue.length >= MAX_QUEUED_TRANSACTIONS) return Promise.reject(new StoreOverloadedError());
    return new Promise<T>((resolve, reject) => {
      const job: Job = { run, readOnly, resolve: resolve as (value: unknown) => void, reject };
      if (job.readOnly) {
        this.#readQueue.push(job);
        this.#readDraining ??= this.#drainReads();
      } else {
        this.#queue.push(job);
        this.#wakeGroup?.();
        this.#draining ??= this.#drain();
      }
    });
  }

  /** The write path's counters (for metrics and tests). */
  groupStats(): GroupCommitStats {
    return { ...this.#stats };
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
    this.#closed = true;
    await Promise.all([this.#draining, this.#readDraining]);
    while (this.#syncing !== null) await this.#syncing;
    await this.#walSyncer.close();
    if (this.#reader.isOpen) this.#reader.close();
    if (this.#db.isOpen) this.#db.close();
  }

  async #drain(): Promise<void> {
    if (!startsAtOnce(this.#policy, this.#lastCommitAt, this.#scheduler.nowMs())) {
      await new Promise<void>((resolve) => { this.#scheduler.defer(resolve); });
    }
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) await this.#runGroup(job);
    this.#draining = null;
  }

  async #drainReads(): Promise<void> {
    for (let job = this.#readQueue.shift(); job !== undefined; job = this.#readQueue.shift()) await this.#runRead(job);
    this.#readDraining = null;
  }

  /** A read on the reader: one snapshot of the last commit, writes refused by query_only. */
  async #runRead(job: Job): Promise<void> {
    let outcome: Outcome;
    try {
      this.#reader.exec('BEGIN');
      outcome = await this.#runOne(job, this.#readerSql);
      this.#reader.exec(outcome.ok ? 'COMMIT' : 'ROLLBACK');
    } catch (error) {
      outcome = { ok: false, error };
      if (this.#reader.isTransaction) this.#reader.exec('ROLLBACK');
    }
    this.#settle(job, outcome);
  }

  /** One write group: BEGIN IMMEDIATE, each member in its own savepoint, one COMMIT, then every member settles. */
  async #runGroup(first: Job): Promise<void> {
    const openedAt = this.#scheduler.nowMs();
    const members: Member[] = [];
    let failure: { error: unknown } | null = null;
    // a shared store gathers the whole group before it takes the write lock; a lone one takes
    // members while the group is open (and holds the lock meanwhile: no other process wants it)
    const gathered = this.#sharedWriters ? await this.#gather(first, openedAt) : null;
    const next = gathered === null ? (size: number) => this.#nextMember(size, openedAt) : (size: number) => gathered[size];
    // taken from the queue but not yet a member: it fails with the group if BEGIN or its SAVEPOINT does
    let taken: Job | undefined = first;
    try {
      if (gathered === null) this.#db.exec('BEGIN IMMEDIATE');
      else await this.#beginShared();
      for (let job: Job | undefined = first; job !== undefined; job = await next(members.length)) {
        taken = job;
        this.#db.exec(`SAVEPOINT ${SAVEPOINT}`);
        const outcome = await this.#runOne(job, this.#sql);
        members.push({ job, outcome });
        taken = undefined;
        // SQLite may roll back the whole transaction on its own (SQLITE_FULL, I/O errors): the group is lost
        if (!this.#db.isTransaction) throw outcome.ok ? new Error('the relay store transaction ended unexpectedly') : outcome.error;
        if (!outcome.ok) this.#db.exec(`ROLLBACK TO ${SAVEPOINT}`);
        this.#db.exec(`RELEASE ${SAVEPOINT}`);
      }
      this.#db.exec('COMMIT');
    } catch (error) {
      failure = { error };
    }
    const cleanup = failure === null ? null : this.#rollBack();
    this.#stats.transactions += members.length;
    this.#stats.lastGroupSize = members.length;
    const unrun = gathered === null ? (taken === undefined ? [] : [taken]) : gathered.slice(members.length);
    for (const job of unrun) this.#settle(job, { ok: false, error: failure?.error });
    if (failure === null) {
      this.#stats.commits += 1;
      this.#lastCommitAt = this.#scheduler.nowMs();
      this.#unsynced.push({ members, openedAt });
      this.#syncing ??= this.#syncCommitted();
      return;
    }
    for (const member of members) {
      // a member that failed on its own keeps its own error; the others share the group's fate
      this.#settle(member.job, member.outcome.ok ? { ok: false, error: cleanup ?? failure.error } : member.outcome);
    }
  }

  /**
   * Syncs the WAL until no committed group waits: each round takes the groups committed so far, so a
   * group committed while a sync runs waits for the next one. Only then do their members settle.
   */
  async #syncCommitted(): Promise<void> {
    while (this.#unsynced.length > 0) {
      const groups = this.#unsynced;
      this.#unsynced = [];
      let error: unknown = null;
      try {
        if (this.#syncFailure !== null) throw this.#syncFailure.error;
        await this.#walSyncer.sync();
        this.#stats.syncs += 1;
      } catch (syncError) {
        error = syncError;
        this.#syncFailure ??= { error: new StoreDiskError('sync', this.dir, { cause: syncError }) };
      }
      const syncedAt = this.#scheduler.nowMs();
      for (const group of groups) {
        if (error === null) this.#onGroupCommit?.(group.members.length, syncedAt - group.openedAt);
        for (const member of group.members) {
          // a member that failed on its own (rolled back to its savepoint) keeps its own error
          this.#settle(member.job, error === null || !member.outcome.ok ? member.outcome : { ok: false, error: this.#syncFailure?.error });
        }
      }
      if (error === null && this.#diskFault !== null && this.#diskHealed()) this.#noteDisk(null);
    }
    this.#syncing = null;
  }

  /** The next queued write that joins the open group, or undefined when the group closes. */
  async #nextMember(size: number, openedAt: number): Promise<Job | undefined> {
    // While a WAL sync runs, committing would not answer anyone sooner (a commit waits for the next
    // sync anyway): the group stays open and takes the writes that arrive until that sync ends.
    while (this.#queue.length === 0 && this.#syncing !== null && size < this.#policy.maxItems) {
      const syncing = this.#syncing;
      await new Promise<void>((resolve) => {
        this.#wakeGroup = resolve;
        void syncing.then(resolve);
      });
      this.#wakeGroup = null;
    }
    // a turn at a time: again only while write requests are still being identified
    while (this.#queue.length === 0 && lingers(this.#policy, this.#groupShape(size, openedAt), this.#lastCommitAt, this.#scheduler.nowMs())) {
      await new Promise<void>((resolve) => { this.#scheduler.defer(resolve); });
      if (!this.#writersPending()) break;
    }
    const next: QueueHead = this.#queue.length === 0 ? 'empty' : 'write';
    if (closesGroup(this.#policy, size, openedAt, this.#scheduler.nowMs(), next)) return undefined;
    return this.#queue.shift();
  }

  /** The members of a shared store's next group, gathered by the same rules as an open group takes them. */
  async #gather(first: Job, openedAt: number): Promise<Job[]> {
    const jobs = [first];
    for (let job = await this.#nextMember(1, openedAt); job !== undefined; job = await this.#nextMember(jobs.length, openedAt)) jobs.push(job);
    return jobs;
  }

  /** BEGIN IMMEDIATE on a shared store: while another process holds the write lock, tries again on timers. */
  async #beginShared(): Promise<void> {
    const deadline = performance.now() + SHARED_WRITE_LOCK_WAIT_MS;
    for (let tries = 1; ; tries += 1) {
      try {
        this.#db.exec('BEGIN IMMEDIATE');
        return;
      } catch (error) {
        if (sqliteResultCode(error) !== SQLITE_BUSY || performance.now() >= deadline) throw error;
      }
      await (tries <= WRITE_LOCK_QUICK_TRIES ? nextTurn() : sleep(1));
    }
  }

  #groupShape(size: number, openedAt: number): { size: number; previousSize: number; openedAt: number; writersPending: boolean } {
    return { size, previousSize: this.#stats.lastGroupSize, openedAt, writersPending: this.#writersPending() };
  }



  /** Rolls back what is left of a failed group; returns the error if that failed, else null. */
  #rollBack(): unknown {
    try {
      // SQLite may already have rolled back on its own (for example after SQLITE_FULL)
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      return null;
    } catch (error) {
      return error;
    }
  }

  async #runOne(job: Job, sql: SQLTagStore): Promise<Outcome> {
    const { use, end } = guardUse(sql);
    const state = { ended: false };
    try {
      return { ok: true, value: await runningJob.run(state, () => job.run(use)) };
    } catch (error) {
      return { ok: false, error };
    } finally {
      state.ended = true;
      end();
    }
  }

  /** Settles a job; a failure the disk caused becomes a StoreDiskError, is counted and may change the disk state. */
  #settle(job: Job, outcome: Outcome): void {
    if (outcome.ok) job.resolve(outcome.value);
    else job.reject(this.#refusal(outcome.error));
  }

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
