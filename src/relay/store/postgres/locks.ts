// Per-target (and per-account) locks of one write transaction (a commit group), held until it ends. SQLite runs
// transactions one at a time; PostgreSQL runs them side by side, from every relay process. The
// core's push reads (dedup row, quota counters) and then writes; taking the target's lock before
// the first such read makes that read-then-write run one transaction at a time per target, as on
// SQLite: a duplicate is answered `duplicate`, and the queue and sender quotas hold exactly. An
// account's lock does the same for the account quota, a host key's for its enrolment row, and a
// host name's within an account for the check that no other live key carries it (two processes
// enrolling one name at once: the second is refused NAME_TAKEN, not by the unique index).
// Transaction-level advisory locks: released by COMMIT or ROLLBACK, and by the server when a relay
// process dies.
//
// Each lock is its own statement, run before the read it guards: under READ COMMITTED every
// statement takes its snapshot when the server starts it, so the read after the wait sees the write
// of the transaction waited for. The lock is sent without waiting for its answer (sql.ts): the read
// follows it in the same round trip, and the server still runs the two one after the other, in
// that order, taking the read's snapshot only once the lock is held. A lock that fails (a deadlock)
// fails the read behind it with its own error.
import type { Sql } from './sql.ts';

/** Distinct locks one transaction may take; beyond it the transaction fails (a bug, not a load). */
export const MAX_LOCKS_PER_TRANSACTION = 10_000;

/** Each lock is sent at once and held (by the server) before any statement sent after it runs. */
export interface TargetLocks {
  target(targetPubkey: string): void;
  account(account: string): void;
  /** a host key's enrolment row, which may not exist yet (a row lock cannot guard a missing row) */
  host(hostPubkey: string): void;
  /** a host name within an account, case-insensitively (the live enrolments carrying it) */
  name(account: string, hostName: string): void;
  /** how many locks are held: a mark for forgetSince */
  held(): number;
  /** forgets the locks taken after `mark` (a rolled-back savepoint released them) */
  forgetSince(mark: number): void;
}

export function transactionLocks(sql: Sql): TargetLocks {
  // in the order taken, so that the ones a savepoint took can be forgotten
  const held = new Set<string>();
  const take = (key: string): void => {
    if (held.has(key)) return;
    if (held.size >= MAX_LOCKS_PER_TRANSACTION) throw new Error(`a relay store transaction asked for more than ${MAX_LOCKS_PER_TRANSACTION} locks`);
    sql.send('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
    held.add(key);
  };
  return {
    target: (targetPubkey) => take(`target:${targetPubkey}`),
    account: (account) => take(`account:${account}`),
    host: (hostPubkey) => take(`host:${hostPubkey}`),
    // a host name never holds a newline, so the last one ends the account: the pair is one key
    name: (account, hostName) => take(`name:${account}\n${hostName.toLowerCase()}`),
    held: () => held.size,
    forgetSince(mark) {
      for (const key of [...held].slice(mark)) held.delete(key);
    },
  };
}
