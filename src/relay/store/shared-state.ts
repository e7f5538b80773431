// What several relay processes on one store share besides the queues (`relay serve --workers N`,
// and relay processes on several machines sharing one database): open enrolment challenges, so
// that one process accepts what another issued, and fixed-window request counters, so that a rate
// limit holds for the whole relay. Both are plain keyed rows a SQL backend (SQLite, PostgreSQL)
// keeps with single-row statements; neither needs a scan beyond its bounded batches.

/**
 * The rows of open enrolment challenges (protocol.md §3.2). The rule over them (one per key, single
 * use, expiring, at most `maxOpen`) is written once in rules/challenges.ts.
 */
export interface ChallengeTransactor {
  /** Removes the key's challenge and returns it with its expiry, or null when it has none. */
  remove(pubkey: string): Promise<{ challenge: string; expiresAt: number } | null>;
  insert(pubkey: string, challenge: string, expiresAt: number): Promise<void>;
  /** How many challenges are live at `nowMs` (at most the open cap plus expired ones not yet dropped). */
  countLive(nowMs: number): Promise<number>;
  /** Deletes up to `limit` challenges expired at `nowMs`; returns how many. */
  deleteExpired(nowMs: number, limit: number): Promise<number>;
}

/**
 * Requests counted per key in fixed windows of `windowMs` (push rate per sender key). The window rule
 * stays inside the primitive, like seq allocation: one statement counts, so that processes counting
 * the same key at once are ordered by its row lock.
 */
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
