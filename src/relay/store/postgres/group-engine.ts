// How a PostgreSQL connection runs a group transaction for the shared runner (../sql/group-runner.ts):
// BEGIN, a savepoint per member, one COMMIT, on one pooled connection per group.
//
// A member's savepoint rides with its first statement (sql.ts); none follows a failed member: the
// savepoint it was rolled back to is still there for the next one, and COMMIT releases the last.
// Rolling a member back to its savepoint frees the locks it took (they belong to the savepoint).
//
// A member that lost a deadlock (SQLSTATE 40P01: two groups taking two targets' locks in opposite
// orders) or a serialization check (40001) runs again from the start in the next group, up to
// MAX_TRANSACTION_ATTEMPTS times. fn must therefore do nothing outside the store that it cannot do
// twice (the core's fns only read and write through the transactor and compute).
import type pg from 'pg';
import type { RelayTransactor } from '../relay-store.ts';
import { runGuarded, type GroupEngine } from '../sql/group-runner.ts';
import { transactionLocks, type TargetLocks } from './locks.ts';
import { pooledClient } from './pool-client.ts';
import { relayTransactor } from './relay-tx.ts';
import { finish, sqlOver, sqlState, type Sql, type Traffic } from './sql.ts';

/** Runs of one transaction's fn at most, when the server picks it as a deadlock or serialization victim. */
export const MAX_TRANSACTION_ATTEMPTS = 5;
/**
 * Locks a group may hold before it takes no more members: each target or account lock is a slot
 * in the server's lock table, which all connections share (max_locks_per_transaction × connections,
 * 6,400 by default). One member stays below MAX_LOCKS_PER_TRANSACTION.
 */
export const GROUP_LOCK_BUDGET = 1_000;
/** SQLSTATEs after which a member may simply run again. */
const RETRYABLE_STATES = new Set(['40001', '40P01']);

/** A member's work: the caller's fn. */
export type PostgresWork = (tx: RelayTransactor) => Promise<unknown>;

/** `where` names the store in errors; `traffic` is added to as statements go out. */
export function postgresGroupEngine(pool: pg.Pool, where: string, traffic: Traffic): GroupEngine<PostgresWork> {
  return {
    group() {
      let client: pg.PoolClient | null = null;
      let sql: Sql | null = null;
      let locks: TargetLocks | null = null;
      /** what the next member's savepoint sends ahead of its first statement */
      let opening = ['SAVEPOINT member'];
      /** locks held when the member's savepoint was opened */
      let heldBefore = 0;
      const open = (): { sql: Sql; locks: TargetLocks } => {
        if (sql === null || locks === null) throw new Error('the relay store group transaction has not begun');
        return { sql, locks };
      };
      return {
        async begin() {
          client = await pooledClient(pool);
          sql = sqlOver(client, traffic);
          // awaited alone: were it to fail, no member's statement may run outside a transaction
          await sql.exec('BEGIN');
          locks = transactionLocks(sql);
        },
        savepoint() {
          const { sql: member, locks: held } = open();
          const opened = Promise.all(opening.map((text) => member.sendAhead(text)));
          heldBefore = held.held();
          return opened.then(() => {});
        },
        run(work) {
          const { sql: member, locks: held } = open();
          return runGuarded(
            member,
            (use) => work(relayTransactor(use, where, held)),
            () => member.settleSent(),
          );
        },
        async release() {
          opening = ['RELEASE SAVEPOINT member', 'SAVEPOINT member'];
        },
        async rollbackTo() {
          const { sql: member, locks: held } = open();
          await member.exec('ROLLBACK TO SAVEPOINT member');
          opening = [];
          held.forgetSince(heldBefore);
        },
        async commit() {
          // a transaction the server had aborted answers COMMIT with ROLLBACK, not an error
          if ((await open().sql.exec('COMMIT')) !== 'COMMIT') throw new Error('the relay store group transaction was rolled back by the server');
          client?.release(false);
        },
        async rollback() {
          // a connection that failed to roll back is closed, not pooled again
          const broken = sql !== null && !(await finish(sql, 'ROLLBACK'));
          client?.release(broken);
          return null;
        },
        full: () => (locks?.held() ?? 0) >= GROUP_LOCK_BUDGET,
      };
    },
    runsAgain: (error, attempts) => RETRYABLE_STATES.has(sqlState(error) ?? '') && attempts < MAX_TRANSACTION_ATTEMPTS,
  };
}
