// How far a backend may group concurrent transactions into one commit (issue 7): a setting of every
// backend (config.ts declares it), kept above them. sqlite/group-commit.ts says how SQLite uses it.

export interface GroupCommitPolicy {
  /** transactions in one commit group at most (1: every transaction commits alone) */
  maxItems: number;
  /** how long a group may stay open gathering queued transactions, and the "busy" window */
  maxWaitMs: number;
}

/** Largest group_commit_max_items accepted: a group holds its members' results in memory until COMMIT. */
export const MAX_GROUP_COMMIT_ITEMS = 10_000;
/** Longest group_commit_max_wait_ms accepted: a group holds the writer, so it must stay short. */
export const MAX_GROUP_COMMIT_WAIT_MS = 1_000;

/**
 * 20 ms: on a busy relay a group gathers what arrives while callers are looked up and the last sync
 * runs; at 32 concurrent senders that makes groups of about 20 and a fifth of the pages written per
 * item of groups of 5. A lone push on an idle relay never waits.
 */
export const DEFAULT_GROUP_COMMIT: GroupCommitPolicy = Object.freeze({ maxItems: 256, maxWaitMs: 20 });
