// Held pulls (protocol.md §3.4 `wait`, docs/relay-operator.md "Held pulls"): a pull that finds
// nothing waits here until an item for its caller commits (anywhere: pull-wakes.ts carries the
// news between processes), until its `wait` ends, or until the process stops, and is then answered
// with a fresh read of the store. One table per process, capped; one held pull per host key.
//
// A wake-up is never lost: a pull is entered in the table (subscribed) before the store is read
// again, so an item that committed after the pull's first read and before it subscribed is found by
// that second read, and one that commits after it subscribed wakes it.

import { getHeapStatistics } from 'node:v8';
import { HELD_PULL_HEAP_BYTES, HELD_PULL_HEAP_SHARE, MAX_HELD_PULLS } from '../fixed-limits.ts';

/**
 * The held pulls a process with this V8 heap limit keeps at most: MAX_HELD_PULLS, or fewer where
 * they would not fit in HELD_PULL_HEAP_SHARE of the heap (a relay's 192 MB old space holds about
 * 10,800; past the cap a pull is answered at once, so the heap never runs out however many hosts hold).
 */
export function heldPullCap(heapLimitBytes: number = getHeapStatistics().heap_size_limit): number {
  return Math.max(0, Math.min(MAX_HELD_PULLS, Math.floor((heapLimitBytes * HELD_PULL_HEAP_SHARE) / HELD_PULL_HEAP_BYTES)));
}

/** A fresh read of the caller's page: the answer, and whether it holds any item. */
export interface PageRead<T> {
  answer: T;
  empty: boolean;
}

interface Held<T> {
  read: () => Promise<PageRead<T>>;
  resolve: (answer: T) => void;
  reject: (error: unknown) => void;
  timer: NodeJS.Timeout | null;
  /** a read runs now; `again`: a wake came meanwhile, so read once more after it */
  reading: boolean;
  again: boolean;
  done: boolean;
}

/**
 * Share of its wait a held pull may end early, at random: hosts that all pulled at once (after a
 * relay restart) would otherwise end their waits together every max_wait_s, and the herd's reads
 * and re-pulls at once starved pushes of store connections (PostgreSQL, 20,000 hosts); spread over
 * the last fifth of the wait, a few rounds scatter them. A relay may answer before `wait` (§3.4).
 */
export const HELD_PULL_EARLY_SHARE = 0.2;

export interface HeldPullsOptions {
  /** held pulls at most (default heldPullCap() of this process's heap) */
  cap?: number;
  /** where each pull's early end is drawn from (default Math.random) */
  random?: () => number;
  /** tests: runs between a pull's first read and its subscription (the window a lost wake-up would fall in) */
  beforeSubscribe?: () => Promise<void>;
}

export class HeldPulls<T> {
  readonly #held = new Map<string, Held<T>>();
  readonly #cap: number;
  readonly #beforeSubscribe: (() => Promise<void>) | undefined;
  readonly #random: () => number;
  #closing = false;

  constructor(options: HeldPullsOptions = {}) {
    this.#cap = options.cap ?? heldPullCap();
    this.#beforeSubscribe = options.beforeSubscribe;
    this.#random = options.random ?? Math.random;
  }

  /** held pulls now */
  get size(): number {
    return this.#held.size;
  }

  /** held pulls at most */
  get cap(): number {
    return this.#cap;
  }

  /**
   * The answer of a pull whose first read (`first`) found nothing: `first` at once when the pull
   * may not wait (no `waitMs`, the table full, the process stopping), else the first non-empty
   * re-read after a wake, or a last read when `waitMs` ends or the process stops. A second pull of
   * `hostKey` answers the first. A pull whose client went away (`gone`) leaves the table at once.
   */
  async hold(hostKey: string, waitMs: number, first: T, read: () => Promise<PageRead<T>>, gone?: AbortSignal): Promise<T> {
    if (waitMs <= 0 || this.#closing || gone?.aborted === true) return first;
    if (this.#beforeSubscribe !== undefined) await this.#beforeSubscribe();
    const previous = this.#held.get(hostKey);
    if (previous === undefined && this.#held.size >= this.#cap) return first;
    return new Promise<T>((resolve, reject) => {
      const held: Held<T> = { read, resolve, reject, timer: null, reading: false, again: false, done: false };
      this.#held.set(hostKey, held);
      if (previous !== undefined) this.#finish(hostKey, previous);
      held.timer = setTimeout(() => this.#finish(hostKey, held), waitMs * (1 - HELD_PULL_EARLY_SHARE * this.#random()));
      gone?.addEventListener('abort', () => this.#settle(hostKey, held, first), { once: true });
      // subscribed: now the read that catches what committed before
      this.#check(hostKey, held);
    });
  }

  /** Items for these host keys committed: their held pulls read the store again (and answer when it has items). */
  wake(hostKeys: Iterable<string>): void {
    for (const key of hostKeys) {
      const held = this.#held.get(key);
      if (held !== undefined) this.#check(key, held);
    }
  }

  /** Every held pull reads again (a wake-up may have been missed, e.g. the notification channel was down). */
  wakeAll(): void {
    this.wake([...this.#held.keys()]);
  }

  /** Stops holding: every held pull is answered now, and later pulls are answered at once. */
  close(): void {
    this.#closing = true;
    for (const [key, held] of [...this.#held]) this.#finish(key, held);
  }

  #check(key: string, held: Held<T>): void {
    if (held.done) return;
    if (held.reading) {
      held.again = true;
      return;
    }
    held.reading = true;
    held.again = false;
    held.read().then(
      (page) => {
        held.reading = false;
        if (held.done) return;
        if (!page.empty) this.#settle(key, held, page.answer);
        else if (held.again) this.#check(key, held);
      },
      (error: unknown) => {
        held.reading = false;
        this.#fail(key, held, error);
      },
    );
  }

  /** Answers `held` with a last read, whatever it holds. */
  #finish(key: string, held: Held<T>): void {
    if (held.done) return;
    this.#release(key, held);
    held.read().then(
      (page) => held.resolve(page.answer),
      (error: unknown) => held.reject(error),
    );
  }

  #settle(key: string, held: Held<T>, answer: T): void {
    if (held.done) return;
    this.#release(key, held);
    held.resolve(answer);
  }

  #fail(key: string, held: Held<T>, error: unknown): void {
    if (held.done) return;
    this.#release(key, held);
    held.reject(error);
  }

  #release(key: string, held: Held<T>): void {
    held.done = true;
    if (held.timer !== null) clearTimeout(held.timer);
    if (this.#held.get(key) === held) this.#held.delete(key);
  }
}
