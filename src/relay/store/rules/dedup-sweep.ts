// The dedup sweep (design §6), written once over the items primitives so that every backend sweeps
// alike. Tombstones (dedup rows whose item is gone) are deleted once accepted before the horizon;
// rows are walked in acceptance order from a cursor, one bounded step per transaction.
import type { ItemTransactor } from '../relay-store.ts';

/** Where a dedup sweep step starts and how much it may do (one step is one write transaction). */
export interface DedupSweepLimits {
  /** the `resumeAfter` of the step before, 0 for the first step of a sweep */
  after: number;
  /** rows deleted at most */
  limit: number;
  /** rows walked at most, deleted or passed over: bounds the time the step holds the writer */
  maxWalk: number;
}

export interface DedupSweepStep {
  deleted: number;
  /** where the next step goes on from, or null when the walk reached its end */
  resumeAfter: number | null;
}

/** Rows read per dedupWalk call: a step that stops early has read little past where it stopped. */
export const DEDUP_WALK_PAGE = 500;

/**
 * One step: walks rows after `limits.after`, at most `limits.maxWalk`, and deletes up to
 * `limits.limit` accepted before `beforeMs` whose item no longer exists. The walk stops at the first
 * row accepted in [beforeMs, nowMs] (a row behind it that is older, after the clock stepped back,
 * waits for a later sweep) and passes over rows whose item still exists. A row stamped after `nowMs`
 * (the clock ran ahead, then was set right) is passed over too: stopping there would keep every
 * later tombstone for as long as the clock was ahead.
 */
export async function sweepDedupStep(items: ItemTransactor, beforeMs: number, nowMs: number, limits: DedupSweepLimits): Promise<DedupSweepStep> {
  for (const [name, value] of Object.entries({ beforeMs, nowMs, ...limits })) {
    if (!Number.isSafeInteger(value)) throw new TypeError(`${name} must be a safe integer, got ${value}`);
  }
  // a step that may walk or delete nothing could never move the sweep on
  if (limits.limit < 1 || limits.maxWalk < 1) throw new RangeError('a dedup sweep step needs limit and maxWalk of at least 1');
  const found: number[] = [];
  let walked = 0;
  let lastWalked = limits.after;
  let hitLimit = false;
  walk: while (walked < limits.maxWalk) {
    const wanted = Math.min(DEDUP_WALK_PAGE, limits.maxWalk - walked);
    const page = await items.dedupWalk(lastWalked, wanted);
    for (const row of page) {
      hitLimit = found.length === limits.limit;
      if (hitLimit) break walk;
      if (row.acceptedAt >= beforeMs && row.acceptedAt <= nowMs) break walk;
      walked += 1;
      lastWalked = row.id;
      if (row.acceptedAt < beforeMs && !row.live) found.push(row.id);
    }
    if (page.length < wanted) break;
  }
  const deleted = found.length === 0 ? 0 : await items.deleteDedupRows(found);
  // stopped by its limit, or walked its whole allowance: more rows may follow
  return { deleted, resumeAfter: hitLimit || walked === limits.maxWalk ? lastWalked : null };
}
