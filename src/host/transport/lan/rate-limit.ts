// A fixed one-minute window counter per key (peer host or client address), in a capped table.

const WINDOW_MS = 60_000;

export class RateLimiter {
  readonly #limit: number;
  readonly #maxKeys: number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  /** `limit` calls per minute per key; at most `maxKeys` keys are tracked (oldest dropped first). */
  constructor(limit: number, maxKeys: number) {
    this.#limit = limit;
    this.#maxKeys = maxKeys;
  }

  /** Counts one call; false when the key is over its limit for the current window. */
  allow(key: string, nowMs: number): boolean {
    let w = this.#windows.get(key);
    if (w === undefined || nowMs - w.start >= WINDOW_MS) {
      this.#windows.delete(key);
      if (this.#windows.size >= this.#maxKeys) {
        const oldest = this.#windows.keys().next().value;
        if (oldest !== undefined) this.#windows.delete(oldest);
      }
      w = { start: nowMs, count: 0 };
      this.#windows.set(key, w);
    }
    w.count++;
    return w.count <= this.#limit;
  }

  get size(): number {
    return this.#windows.size;
  }
}
