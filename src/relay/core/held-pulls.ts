// Held pulls (protocol.md §3.4 `wait`, docs/relay-operator.md "Held pulls"): a pull that may wait
// is entered here before it reads the store; if the read finds nothing it waits until an item for
// its caller commits (anywhere: pull-wakes.ts carries the news between processes), until its
// `wait` ends, or until the process stops. One table per process, capped; one held pull per host key.
//
// A wake-up is never lost: a pull is in the table (subscribed) before its read starts, so an item
// that committed before the read's snapshot is in that read, and one that commits after it wakes
// the pull; a wake that comes while a read runs makes the pull read once more after it.
//
// One read per pull when nothing comes: a wait that ends with no wake since the pull's last read
// is answered with that read's page (nothing for the caller committed since, or its wake-up would
// have come); only a woken pull reads again. With 20,000 hosts holding, a read at every wait's end
// too was 20,000 read transactions a minute in waves, and pushes waited behind them on PostgreSQL.

import { getHeapStatistics } from 'node:v8';
import type { ReadPriority } from '../store/relay-store.ts';
import { HELD_PULL_HEAP_BYTES, HELD_PULL_HEAP_SHARE, MAX_HELD_PULLS } from '../fixed-limits.ts';
import { TickedDeadlines, type TickHandle } from './ticked-deadlines.ts';

/**
 * The held pulls a process with this V8 heap limit keeps at most: MAX_HELD_PULLS, or fewer where
 * they would not fit in HELD_PULL_HEAP_SHARE of the heap (a relay's 192 MB old space holds about
 * 10,800; past the cap a pull is answered at once, so the heap never runs out however many hosts hold).
 */
export function heldPullCap(heapLimitBytes: number = getHeapStatistics().heap_size_limit): number {
  return Math.max(0, Math.min(MAX_HELD_PULLS, Math.floor((heapLimitBytes * HELD_PULL_HEAP_SHARE) / HELD_PULL_HEAP_BYTES)));
}

/** A read of the caller's page: the answer, and whether it holds any item. */
export interface PageRead<T> {
  answer: T;
  empty: boolean;
}

/** Reads the caller's page; `priority`: a wake-up asked for it ('woken'), a pull that may wait ('held'), or one that may not ('ordinary'). */
export type PageReader<T> = (priority: ReadPriority) => Promise<PageRead<T>>;

interface Held<T> {
  key: string;
  read: PageReader<T>;
  resolve: (answer: T) => void;
  reject: (error: unknown) => void;
  /** the tick its wait ends on (null: out of the grid) */
  end: TickHandle | null;
  /** a read runs now; `again`: a wake came meanwhile, so read once more after it */
  reading: boolean;
  again: boolean;
  /** the last read's (empty) page, answered when the wait ends with no read running */
  last: T | null;
  /** out of the table (wait over, replaced, client gone, stopping): answered by the read running, or with `last` */
  ending: boolean;
  done: boolean;
}

/**
 * Share of its wait a held pull may end early, at random: hosts that all pulled at once (after a
 * relay restart) would otherwise end their waits together every max_wait_s, and the herd's reads
 * and re-pulls at once starved pushes of store connections (PostgreSQL, 20,000 hosts); spread over
 * the last fifth of the wait, a few rounds scatter them. A relay may answer before `wait` (§3.4).
 */
export const HELD_PULL_EARLY_SHARE = 0.2;

/**
 * Waits end on a grid of this many milliseconds (ticked-deadlines.ts): the pulls whose waits end in
 * one tick are answered, and pulled again by their hosts, together, which costs the relay about half
 * of what pulls arriving one by one do. A wait ends at most one tick early (never after `wait`).
 * Short enough that a burst of re-pulls (20,000 hosts: about 100 a tick) takes the event loop a
 * few milliseconds, so a wake-up behind it is hardly delayed.
 */
export const HELD_PULL_END_TICK_MS = 250;

export interface HeldPullsOptions {
  /** held pulls at most (default heldPullCap() of this process's heap) */
  cap?: number;
  /** where each pull's early end is drawn from (default Math.random) */
  random?: () => number;
  /** tests: runs after each read of a held pull, before its page is used (the window a lost wake-up would fall in) */
  afterRead?: () => Promise<void>;
  /** monotonic milliseconds the tick grid is laid on (default performance.now) */
  nowMs?: () => number;
}

export class HeldPulls<T> {
  readonly #held = new Map<string, Held<T>>();
  readonly #cap: number;
  readonly #afterRead: (() => Promise<void>) | undefined;
  readonly #random: () => number;
  readonly #ends: TickedDeadlines<Held<T>>;
  #closing = false;

  constructor(options: HeldPullsOptions = {}) {
    this.#cap = options.cap ?? heldPullCap();
    this.#afterRead = options.afterRead;
    this.#random = options.random ?? Math.random;
    const nowMs = options.nowMs;
    this.#ends = new TickedDeadlines({ tickMs: HELD_PULL_END_TICK_MS, onDue: (held) => this.#end(held), ...(nowMs === undefined ? {} : { nowMs }) });
  }

  /** held pulls now (a pull is counted from before its first read) */
  get size(): number {
    return this.#held.size;
  }

  /** held pulls at most */
  get cap(): number {
    return this.#cap;
  }

  /**
   * The answer of a pull of `hostKey`: its page at once when it has items or may not wait (no
   * `waitMs`, the table full, the process stopping), else the first page with items after a wake,
   * or its last (empty) page when `waitMs` ends or the process stops. A second pull of `hostKey`
   * ends the first. A pull whose client went away (`gone`) leaves the table at once.
   */
  async pull(hostKey: string, waitMs: number, read: PageReader<T>, gone?: AbortSignal): Promise<T> {
    const previous = this.#held.get(hostKey);
    const mayHold = waitMs > 0 && !this.#closing && gone?.aborted !== true && (previous !== undefined || this.#held.size < this.#cap);
    if (!mayHold) return (await read(waitMs > 0 ? 'held' : 'ordinary')).answer;
    return new Promise<T>((resolve, reject) => {
      const held: Held<T> = { key: hostKey, read, resolve, reject, end: null, reading: false, again: false, last: null, ending: false, done: false };
      // subscribed before the read: what commits from now on wakes it
      this.#held.set(hostKey, held);
      if (previous !== undefined) this.#end(previous);
      held.end = this.#ends.add(held, waitMs * (1 - HELD_PULL_EARLY_SHARE * this.#random()));
      gone?.addEventListener('abort', () => this.#end(held), { once: true });
      this.#read(held, 'held');
    });
  }

  /** Items for these host keys committed: their held pulls read the store again (and answer when it has items). */
  wake(hostKeys: Iterable<string>): void {
    for (const key of hostKeys) {
      const held = this.#held.get(key);
      if (held !== undefined) this.#read(held, 'woken');
    }
  }

  /** Every held pull reads again (a wake-up may have been missed, e.g. the notification channel was down). */
  wakeAll(): void {
    this.wake([...this.#held.keys()]);
  }

  /** Stops holding: every held pull is answered now, and later pulls are answered at once. */
  close(): void {
    this.#closing = true;
    for (const held of [...this.#held.values()]) this.#end(held);
  }

  #read(held: Held<T>, priority: ReadPriority): void {
    if (held.done || held.ending) return;
    if (held.reading) {
      held.again = true;
      return;
    }
    held.reading = true;
    held.again = false;
    held
      .read(priority)
      .then(async (page) => {
        await this.#afterRead?.();
        held.reading = false;
        if (!page.empty || held.ending) this.#settle(held, page.answer);
        else if (held.again) this.#read(held, 'woken');
        else held.last = page.answer;
      })
      .catch((error: unknown) => {
        held.reading = false;
        this.#fail(held, error);
      });
  }

  /** Takes `held` out of the table and answers it with its last page, or with the page of the read running now. */
  #end(held: Held<T>): void {
    if (held.done || held.ending) return;
    held.ending = true;
    this.#leave(held);
    if (!held.reading && held.last !== null) this.#settle(held, held.last);
  }

  #settle(held: Held<T>, answer: T): void {
    if (held.done) return;
    this.#release(held);
    held.resolve(answer);
  }

  #fail(held: Held<T>, error: unknown): void {
    if (held.done) return;
    this.#release(held);
    held.reject(error);
  }

  #release(held: Held<T>): void {
    held.done = true;
    this.#leave(held);
  }

  #leave(held: Held<T>): void {
    if (held.end !== null) this.#ends.delete(held.end, held);
    held.end = null;
    if (this.#held.get(held.key) === held) this.#held.delete(held.key);
  }
}
