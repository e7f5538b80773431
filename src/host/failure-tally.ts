// Failed delivery attempts, counted per peer and transport and logged as one summary line per
// window: every failed attempt of a row is countable in the daemon's log without a line each.

/** Length of one counting window. */
export const FAILURE_SUMMARY_MS = 60_000;
/** Most (peer, transport) pairs counted in one window; failures beyond it count under "other". */
export const FAILURE_TALLY_MAX = 256;

interface Count {
  attempts: number;
  lastError: string;
}

export class FailureTally {
  readonly #counts = new Map<string, Count>();
  readonly #log: (line: string) => void;
  #windowStart: number;

  constructor(log: (line: string) => void, nowMs: number) {
    this.#log = log;
    this.#windowStart = nowMs;
  }

  /** One row's failed attempt to `peer` over `via`. */
  note(peer: string, via: string, error: string): void {
    let key = `${peer} over ${via}`;
    if (!this.#counts.has(key) && this.#counts.size >= FAILURE_TALLY_MAX) key = 'other peers';
    const count = this.#counts.get(key) ?? { attempts: 0, lastError: '' };
    count.attempts++;
    count.lastError = error;
    this.#counts.set(key, count);
  }

  /** Logs the window's counts once it is over (`force`: now, at a stop) and starts the next. */
  summarize(nowMs: number, force = false): void {
    if (!force && nowMs - this.#windowStart < FAILURE_SUMMARY_MS) return;
    const seconds = Math.max(1, Math.round((nowMs - this.#windowStart) / 1000));
    for (const [key, count] of this.#counts) {
      this.#log(`failed attempts: ${count.attempts} to ${key} in the last ${seconds} s; last error: ${count.lastError}`);
    }
    this.#counts.clear();
    this.#windowStart = nowMs;
  }
}
