// Deadlines rounded down to a grid of ticks, with one timer per tick: every value due in one tick is
// handed over in one timer callback, so one event-loop turn. held-pulls.ts ends its waits here:
// the empty answers of a tick go out together and their hosts' re-pulls arrive together, and the
// relay then reads, verifies (one batch to the hop threads) and answers them in a few turns
// instead of waking once per pull; a lone pull cost the relay about twice its share of a batch
// (docs/benchmark.md, issue 30).

export interface TickedDeadlinesOptions<V> {
  /** the grid, in milliseconds */
  tickMs: number;
  /** called with each value when its tick comes (not for values deleted before) */
  onDue: (value: V) => void;
  /** monotonic milliseconds (default performance.now) */
  nowMs?: () => number;
}

/** A deadline's place: the tick it was rounded down to (to delete it again). */
export type TickHandle = number;

export class TickedDeadlines<V> {
  readonly #tickMs: number;
  readonly #onDue: (value: V) => void;
  readonly #nowMs: () => number;
  /** tick number → its timer and the values due then; at most one entry per tick of the longest delay */
  readonly #ticks = new Map<TickHandle, { timer: NodeJS.Timeout; values: Set<V> }>();

  constructor(options: TickedDeadlinesOptions<V>) {
    this.#tickMs = options.tickMs;
    this.#onDue = options.onDue;
    this.#nowMs = options.nowMs ?? (() => performance.now());
  }

  /** `value` is due `delayMs` from now, rounded down to its tick: never late, at most one tick early (never before now). */
  add(value: V, delayMs: number): TickHandle {
    const now = this.#nowMs();
    const tick = Math.floor((now + delayMs) / this.#tickMs);
    const due = this.#ticks.get(tick);
    if (due !== undefined) {
      due.values.add(value);
      return tick;
    }
    const timer = setTimeout(() => this.#fire(tick), Math.max(0, tick * this.#tickMs - now));
    this.#ticks.set(tick, { timer, values: new Set([value]) });
    return tick;
  }

  /** `value` (added with `handle`) is no longer due; its tick's timer goes with its last value. */
  delete(handle: TickHandle, value: V): void {
    const due = this.#ticks.get(handle);
    if (due === undefined || !due.values.delete(value) || due.values.size > 0) return;
    clearTimeout(due.timer);
    this.#ticks.delete(handle);
  }

  #fire(tick: TickHandle): void {
    const due = this.#ticks.get(tick);
    if (due === undefined) return;
    this.#ticks.delete(tick);
    for (const value of due.values) this.#onDue(value);
  }
}
