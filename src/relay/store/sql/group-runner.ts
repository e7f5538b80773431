// The group-transaction runner of both SQL backends (group commit, issue 7). Transactions wait in
// one FIFO queue (capped: MAX_QUEUED_TRANSACTIONS); the ones a group takes share one database
// transaction, each inside its own savepoint, so each stays all-or-nothing while one COMMIT (and
// one after-commit step, such as SQLite's WAL sync) covers them all.
//
// The settle rule, written here once: no member settles before its group's COMMIT and the
// after-commit step that follows it have returned; a member that failed on its own (rolled back to
// its savepoint while the others went on) keeps its own error; every other member shares the
// group's fate (the group's error, or the after-commit step's). A member the engine runs again
// (PostgreSQL's deadlock victims) settles with the group that finally runs it.
//
// A backend brings the engine (begin, savepoint, release, rollback-to, commit, rollback, and how a
// member's fn runs over its connection) and the gathering rule (which queued transactions join a
// group, and when).
import { AsyncLocalStorage } from 'node:async_hooks';
import { StoreClosedError, StoreOverloadedError, TransactionMisuseError } from '../errors.ts';
import { guardUse } from '../guard.ts';

/** Transactions (and reads) waiting for their turn; beyond this the store refuses new ones (StoreOverloadedError). */
export const MAX_QUEUED_TRANSACTIONS = 10_000;

export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Set while a read's or a transaction's fn runs, so that a nested one fails instead of waiting for itself. */
const runningFn = new AsyncLocalStorage<{ ended: boolean }>();

/**
 * Runs fn with a guarded view of `connection` that refuses use once fn ended (guard.ts), marked as
 * running for the nested-transaction refusal. `settleSent` (PostgreSQL: the statements fn sent
 * without waiting) is awaited before fn counts as done; its failure fails fn.
 */
export async function runGuarded<C>(connection: C, fn: (use: () => C) => Promise<unknown>, settleSent?: () => Promise<void>): Promise<Outcome> {
  const guard = guardUse(connection);
  const state = { ended: false };
  try {
    const value = await runningFn.run(state, () => fn(guard.use));
    await settleSent?.();
    return { ok: true, value };
  } catch (error) {
    await settleSent?.().catch(() => {});
    return { ok: false, error };
  } finally {
    state.ended = true;
    guard.end();
  }
}

/** One group's database transaction, as a backend runs it. `W` is a member's work (its fn). */
export interface GroupTransaction<W> {
  begin(): Promise<void>;
  /**
   * opens the next member's savepoint. It may throw at once, or be sent ahead of the member's first
   * statement: the promise is awaited once the member ran, and its failure fails the group.
   */
  savepoint(): Promise<void>;
  /** runs a member's work inside its savepoint (through runGuarded) */
  run(work: W): Promise<Outcome>;
  /** ends the savepoint of a member that succeeded, keeping its work */
  release(): Promise<void>;
  /** undoes a member that failed with `error` and ends its savepoint; throws when the group is lost */
  rollbackTo(error: unknown): Promise<void>;
  commit(): Promise<void>;
  /** rolls a failed group back and ends it; returns an error to tell its succeeded members instead of the group's, or null */
  rollback(): Promise<unknown>;
  /** whether the group takes no more members (PostgreSQL: its lock budget is spent); the rest wait for the next group */
  full?(): boolean;
}

export interface GroupEngine<W> {
  /** a new group transaction (not begun) */
  group(): GroupTransaction<W>;
  /** whether a member that failed with `error` on its `attempts`-th run runs again, first in the next group */
  runsAgain?(error: unknown, attempts: number): boolean;
}

/** What a gathering rule may look at. */
export interface GroupState {
  /** transactions queued, not yet taken by a group */
  readonly waiting: number;
  /** members of the last group */
  readonly lastGroupSize: number;
  /** when the last group committed (the runner's clock), or null */
  readonly lastCommitAt: number | null;
  /** the after-commit step running now, or null */
  readonly afterCommitting: Promise<void> | null;
  /** resolves once a transaction is queued or `until` settles */
  arrival(until: Promise<void>): Promise<void>;
}

/** Which queued transactions join a group, and when. */
export interface Gathering {
  /** true: a group takes all its members before it begins; false: one by one while its transaction is open */
  readonly beforeBegin: boolean;
  /** awaited before a drain's first group (SQLite: one event-loop turn on a busy relay) */
  start?(state: GroupState): Promise<void> | undefined;
  /** whether the queue's head joins a group of `size` members opened at `openedAt`; may wait for arrivals */
  joins(state: GroupState, size: number, openedAt: number): boolean | Promise<boolean>;
}

/** A step after COMMIT that the members wait for (SQLite: the WAL sync). */
export interface AfterCommit {
  /** makes every commit so far durable: one run covers every group committed before it started */
  run(): Promise<void>;
  /** told after the groups a successful run covered have settled */
  done?(): void;
}

export interface GroupRunnerOptions<W> {
  engine: GroupEngine<W>;
  gathering: Gathering;
  nowMs: () => number;
  /** once it fails, what was committed may not be durable: the store takes no more work */
  afterCommit?: AfterCommit;
  /** told once a group's members are about to settle after its COMMIT (and after-commit step): how many, how long from its start */
  onGroupCommit?: (size: number, latencyMs: number) => void;
  /** reads waiting (or running), counted against MAX_QUEUED_TRANSACTIONS beside the queued transactions */
  pendingReads: () => number;
  /** the backend's own reason to refuse new work (PostgreSQL: its store lock was lost), or null */
  refusal?: () => Error | null;
  /** what a caller is told for an error (SQLite: a disk failure becomes a StoreDiskError) */
  errorOf?: (error: unknown) => unknown;
}

interface Job<W> {
  work: W;
  /** runs so far (a member may run again, runsAgain) */
  attempts: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface Member<W> {
  job: Job<W>;
  outcome: Outcome;
}

/** A committed group waiting for the after-commit step. */
interface CommittedGroup<W> {
  members: Array<Member<W>>;
  openedAt: number;
}

/** Counters of the write path since the store opened. */
export interface GroupCounts {
  /** COMMITs of groups */
  commits: number;
  /** transactions that went through a group as members, committed or rolled back */
  transactions: number;
  /** members of the last group */
  lastGroupSize: number;
}

export class GroupRunner<W> implements GroupState {
  readonly #engine: GroupEngine<W>;
  readonly #gathering: Gathering;
  readonly #nowMs: () => number;
  readonly #afterCommit: AfterCommit | undefined;
  readonly #onGroupCommit: ((size: number, latencyMs: number) => void) | undefined;
  readonly #pendingReads: () => number;
  readonly #backendRefusal: () => Error | null;
  readonly #errorOf: (error: unknown) => unknown;
  readonly #queue: Array<Job<W>> = [];
  readonly #counts: GroupCounts = { commits: 0, transactions: 0, lastGroupSize: 0 };
  #lastCommitAt: number | null = null;
  #draining: Promise<void> | null = null;
  /** committed, waiting for the after-commit step: settled by the next run that starts after their COMMIT */
  #committed: Array<CommittedGroup<W>> = [];
  #afterCommitting: Promise<void> | null = null;
  /** a failed after-commit step: what was committed may not be durable, so no more work is taken */
  #afterCommitFailure: { error: unknown } | null = null;
  /** set while an open group waits for an arrival */
  #wake: (() => void) | null = null;
  #closed = false;

  constructor(options: GroupRunnerOptions<W>) {
    this.#engine = options.engine;
    this.#gathering = options.gathering;
    this.#nowMs = options.nowMs;
    this.#afterCommit = options.afterCommit;
    this.#onGroupCommit = options.onGroupCommit;
    this.#pendingReads = options.pendingReads;
    this.#backendRefusal = options.refusal ?? (() => null);
    this.#errorOf = options.errorOf ?? ((error) => error);
  }

  get waiting(): number {
    return this.#queue.length;
  }

  get lastGroupSize(): number {
    return this.#counts.lastGroupSize;
  }

  get lastCommitAt(): number | null {
    return this.#lastCommitAt;
  }

  get afterCommitting(): Promise<void> | null {
    return this.#afterCommitting;
  }

  async arrival(until: Promise<void>): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      void until.then(resolve);
    });
    this.#wake = null;
  }

  counts(): GroupCounts {
    return { ...this.#counts };
  }

  /**
   * Why new work (a transaction, or a read the backend runs itself) is refused now, or null: after
   * a failed after-commit step even reads are refused (they could hand out what never became
   * durable); then a closed store, the backend's reason, a nested call, a full queue.
   */
  refusal(): unknown {
    if (this.#afterCommitFailure !== null) return this.#errorOf(this.#afterCommitFailure.error);
    if (this.#closed) return new StoreClosedError();
    const backend = this.#backendRefusal();
    if (backend !== null) return backend;
    const current = runningFn.getStore();
    if (current !== undefined && !current.ended) {
      return new TransactionMisuseError('a relay store transaction was started inside another one (it would wait for itself)');
    }
    if (this.#queue.length + this.#pendingReads() >= MAX_QUEUED_TRANSACTIONS) return new StoreOverloadedError();
    return null;
  }

  /** Queues `work`; settles by the settle rule above. */
  transaction<T>(work: W): Promise<T> {
    const refusal = this.refusal();
    if (refusal !== null) return Promise.reject(refusal);
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, attempts: 0, resolve: resolve as (value: unknown) => void, reject });
      this.#wake?.();
      this.#draining ??= this.#drain();
    });
  }

  /** Refuses new work, then waits for what was queued to settle. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#draining;
    while (this.#afterCommitting !== null) await this.#afterCommitting;
  }

  async #drain(): Promise<void> {
    const started = this.#gathering.start?.(this);
    if (started !== undefined) await started;
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) await this.#runGroup(job);
    this.#draining = null;
  }

  /** One group: begin, each member in its own savepoint, one COMMIT, then the settle rule. */
  async #runGroup(first: Job<W>): Promise<void> {
    const openedAt = this.#nowMs();
    const beforeBegin = this.#gathering.beforeBegin;
    // taken from the queue, not yet run
    const waiting = beforeBegin ? await this.#gather(first, openedAt) : [first];
    const members: Array<Member<W>> = [];
    // to run in the next group, in their order: members to run again, and what a full group left
    const again: Array<Job<W>> = [];
    // the job being run: it fails with the group if its savepoint, or ending it, does
    let running: Job<W> | undefined;
    let failure: { error: unknown } | null = null;
    let cleanup: unknown = null;
    const tx = this.#engine.group();
    try {
      await tx.begin();
      const next = async (): Promise<Job<W> | undefined> => waiting.shift() ?? (beforeBegin ? undefined : this.#take(members.length + again.length, openedAt));
      for (let job = await next(); job !== undefined; job = await next()) {
        if (tx.full?.() === true) {
          again.push(job, ...waiting.splice(0));
          break;
        }
        running = job;
        const opened = tx.savepoint();
        job.attempts += 1;
        const outcome = await tx.run(job.work);
        await opened;
        if (outcome.ok) await tx.release();
        else await tx.rollbackTo(outcome.error);
        running = undefined;
        if (!outcome.ok && this.#engine.runsAgain?.(outcome.error, job.attempts) === true) again.push(job);
        else members.push({ job, outcome });
      }
      await tx.commit();
    } catch (error) {
      failure = { error };
      cleanup = await tx.rollback();
    }
    this.#counts.transactions += members.length;
    this.#counts.lastGroupSize = members.length;
    if (failure === null) {
      this.#counts.commits += 1;
      this.#lastCommitAt = this.#nowMs();
      this.#queue.unshift(...again);
      const group = { members, openedAt };
      if (this.#afterCommit === undefined) {
        this.#settleCommitted(group, null, this.#nowMs());
      } else {
        this.#committed.push(group);
        this.#afterCommitting ??= this.#runAfterCommit(this.#afterCommit);
      }
      return;
    }
    for (const member of members) {
      // a member that failed on its own keeps its own error; the others share the group's fate
      this.#settle(member.job, member.outcome.ok ? { ok: false, error: cleanup ?? failure.error } : member.outcome);
    }
    for (const job of [...again, ...(running === undefined ? [] : [running]), ...waiting]) this.#settle(job, { ok: false, error: failure.error });
  }

  /** The members of a group that takes them all before it begins. */
  async #gather(first: Job<W>, openedAt: number): Promise<Array<Job<W>>> {
    const jobs = [first];
    for (let job = await this.#take(1, openedAt); job !== undefined; job = await this.#take(jobs.length, openedAt)) jobs.push(job);
    return jobs;
  }

  /** The queue's head if it joins a group of `size` members, else undefined. */
  async #take(size: number, openedAt: number): Promise<Job<W> | undefined> {
    const decided = this.#gathering.joins(this, size, openedAt);
    const joins = typeof decided === 'boolean' ? decided : await decided;
    return joins ? this.#queue.shift() : undefined;
  }

  /**
   * Runs the after-commit step until no committed group waits: each run takes the groups committed
   * so far, so a group committed while a run is under way waits for the next. Only then do their
   * members settle.
   */
  async #runAfterCommit(afterCommit: AfterCommit): Promise<void> {
    while (this.#committed.length > 0) {
      const groups = this.#committed;
      this.#committed = [];
      let failed: { error: unknown } | null = null;
      try {
        if (this.#afterCommitFailure !== null) throw this.#afterCommitFailure.error;
        await afterCommit.run();
      } catch (error) {
        this.#afterCommitFailure ??= { error };
        failed = this.#afterCommitFailure;
      }
      const doneAt = this.#nowMs();
      for (const group of groups) this.#settleCommitted(group, failed, doneAt);
      if (failed === null) afterCommit.done?.();
    }
    this.#afterCommitting = null;
  }

  /** Settles a committed group's members; `failed` is a failed after-commit step's error. */
  #settleCommitted(group: CommittedGroup<W>, failed: { error: unknown } | null, atMs: number): void {
    if (failed === null) this.#onGroupCommit?.(group.members.length, atMs - group.openedAt);
    for (const member of group.members) {
      // a member that failed on its own (rolled back to its savepoint) keeps its own error
      this.#settle(member.job, failed === null || !member.outcome.ok ? member.outcome : { ok: false, error: failed.error });
    }
  }

  #settle(job: Job<W>, outcome: Outcome): void {
    if (outcome.ok) job.resolve(outcome.value);
    else job.reject(this.#errorOf(outcome.error));
  }
}
