// What several relay processes on one store share besides the queues (`relay serve --workers N`,
// and relay processes on several machines sharing one database): open enrolment challenges, so
// that one process accepts what another issued, and fixed-window request counters, so that a rate
// limit holds for the whole relay. Both are plain keyed rows a SQL backend (SQLite, PostgreSQL)
// keeps with single-row statements; neither needs a scan beyond its bounded batches.

/** Open enrolment challenges (protocol.md §3.2): one per key, single use, expiring, at most `maxOpen`. */
export interface ChallengeTransactor {
  /**
   * Opens `challenge` for `pubkey` until `expiresAt`, replacing the key's open one, and drops up to
   * a bounded batch of expired challenges; when `maxOpen` live challenges are open already, nothing
   * is stored and it returns false.
   */
  open(pubkey: string, challenge: string, expiresAt: number, nowMs: number, maxOpen: number): Promise<boolean>;
  /** Removes the key's open challenge and returns it when it is live at `nowMs`, else null: a second take finds nothing. */
  take(pubkey: string, nowMs: number): Promise<string | null>;
  /** Deletes up to `limit` challenges expired at `nowMs`; returns how many. */
  deleteExpired(nowMs: number, limit: number): Promise<number>;
}

/** Requests counted per key in fixed windows of `windowMs` (push rate per sender key). */
export interface RateWindowTransactor {
  /**
   * Counts one request for `key` at `nowMs` and returns the window's count, this one included. A new
   * window starts at `nowMs` when the key has none, when its window ended, or when it starts after
   * `nowMs` (a clock that went back).
   */
  count(key: string, nowMs: number, windowMs: number): Promise<number>;
  /** Deletes up to `limit` windows that ended by `nowMs`; returns how many. */
  deleteEnded(nowMs: number, windowMs: number, limit: number): Promise<number>;
}
