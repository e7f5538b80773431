// Usage counters in PostgreSQL (quotas, design §7): one row read per check, never a scan of a queue.
// The item primitives (items.ts) charge and release them in the statements that change items.
import type { Usage, UsageReader } from '../relay-store.ts';
import { int, type Row } from '../sql/columns.ts';
import type { TargetLocks } from './locks.ts';
import type { ReadAhead } from './read-ahead.ts';
import type { Sql, UsePg } from './sql.ts';

const QUEUE_USAGE = 'SELECT items, bytes FROM queue_usage WHERE target_pubkey = $1';
const SENDER_USAGE = 'SELECT items, bytes FROM sender_usage WHERE sender_pubkey = $1 AND target_pubkey = $2';
const queueKey = (target: string): string => `queue ${target}`;
const senderKey = (sender: string, target: string): string => `sender ${sender} ${target}`;

function usageOf(row: Row | undefined): Usage {
  return row === undefined ? { items: 0, bytes: 0 } : { items: int(row, 'items'), bytes: int(row, 'bytes') };
}

export function usageReader(use: UsePg): UsageReader {
  return {
    async queue(target) {
      return usageOf(await use().row(QUEUE_USAGE, [target]));
    },
    async sender(sender, target) {
      return usageOf(await use().row(SENDER_USAGE, [sender, target]));
    },
    async account(account) {
      return usageOf(await use().row('SELECT items, bytes FROM account_usage WHERE account = $1', [account]));
    },
  };
}

/** Sends the target's queue usage and the sender's share of it ahead (read-ahead.ts); the caller holds the target's lock. */
export function readUsageAhead(sql: Sql, readAhead: ReadAhead, sender: string, target: string): void {
  readAhead.keep(queueKey(target), sql.send(QUEUE_USAGE, [target]));
  readAhead.keep(senderKey(sender, target), sql.send(SENDER_USAGE, [sender, target]));
}

/**
 * In a transaction, a quota read takes its target's or account's lock first (locks.ts): the check and
 * the charge that follows are one step. A target's usage read ahead with its dedup row was read under that lock.
 */
export function usageTransactor(use: UsePg, locks: TargetLocks, readAhead: ReadAhead): UsageReader {
  const read = usageReader(use);
  return {
    async queue(target) {
      locks.target(target);
      const ahead = readAhead.take(queueKey(target));
      return ahead === undefined ? read.queue(target) : usageOf(await ahead);
    },
    async sender(sender, target) {
      locks.target(target);
      const ahead = readAhead.take(senderKey(sender, target));
      return ahead === undefined ? read.sender(sender, target) : usageOf(await ahead);
    },
    async account(account) {
      locks.account(account);
      return read.account(account);
    },
  };
}
