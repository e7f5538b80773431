// Fixed one-minute windows counting requests per key (a sender key, a client address). The table is
// hard-capped: when full, the entry whose window started first is dropped (it is the stalest).

export const RATE_WINDOW_MS = 60_000;

export class RateWindow {
  readonly #limit: number;
  readonly #maxKeys: number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  /** `limit` requests per key per minute; at most `maxKeys` keys remembered. */
  constructor(limit: number, maxKeys: number) {
    this.#limit = limit;
    this.#maxKeys = maxKeys;
  }

  /** Counts one request for `key` at `nowMs`; false when it is over the limit. */
  take(key: string, nowMs: number): boolean {
    let window = this.#windows.get(key);
    if (window === undefined || nowMs - window.start >= RATE_WINDOW_MS || nowMs < window.start) {
      this.#windows.delete(key);
      while (this.#windows.size >= this.#maxKeys) {
        const oldest = this.#windows.keys().next().value;
        if (oldest === undefined) break;
        this.#windows.delete(oldest);
      }
      window = { start: nowMs, count: 0 };
      this.#windows.set(key, window);
    }
    window.count += 1;
    return window.count <= this.#limit;
  }

  get size(): number {
    return this.#windows.size;
  }
}
