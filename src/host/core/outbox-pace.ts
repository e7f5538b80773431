// How fast the outbox moves, shared by its flush (outbox.ts) and the relay transport and client:
// the backoff after a failure, and the most rows one pass takes from the store.

export const BACKOFF_BASE_MS = 5_000;
export const BACKOFF_MAX_MS = 60 * 60 * 1000;
/** Most rows one flush takes from the store (the rest wait for the next tick). */
export const FLUSH_ROWS_MAX = 1000;

/** The wait after `attempts` failures: 5 s × 2^attempts, at most 1 h. */
export function backoffMs(attempts: number): number {
  return Math.min(BACKOFF_BASE_MS * 2 ** Math.min(attempts, 30), BACKOFF_MAX_MS);
}
