// Usage counters (quotas, design §7): per target queue, per (sender, target) share, per account.
// Every change to the items table goes through `chargeUsage`, so the counters always equal the
// aggregates over items without a quota check ever scanning a queue.
import type { SQLTagStore } from 'node:sqlite';
import type { Usage, UsageReader } from '../relay-store.ts';
import { int, text, textOrNull, type Row } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';

/** A set of items that share who is charged for them. */
export interface UsageGroup {
  targetPubkey: string;
  senderPubkey: string;
  account: string | null;
  items: number;
  bytes: number;
}

function usageOf(row: Row | undefined): Usage {
  return row === undefined ? { items: 0, bytes: 0 } : { items: int(row, 'items'), bytes: int(row, 'bytes') };
}

export function queueUsage(sql: SQLTagStore, target: string): Usage {
  return usageOf(sql.get`SELECT items, bytes FROM queue_usage WHERE target_pubkey = ${target}`);
}

export function senderUsage(sql: SQLTagStore, sender: string, target: string): Usage {
  return usageOf(sql.get`SELECT items, bytes FROM sender_usage WHERE sender_pubkey = ${sender} AND target_pubkey = ${target}`);
}

export function accountUsage(sql: SQLTagStore, account: string): Usage {
  return usageOf(sql.get`SELECT items, bytes FROM account_usage WHERE account = ${account}`);
}

/** Adds (sign 1) or releases (sign -1) a group's items on every counter that charges them. */
export function chargeUsage(sql: SQLTagStore, group: UsageGroup, sign: 1 | -1): void {
  const items = sign * group.items;
  const bytes = sign * group.bytes;
  const { targetPubkey: target, senderPubkey: sender, account } = group;
  sql.run`INSERT INTO queue_usage (target_pubkey, items, bytes) VALUES (${target}, ${items}, ${bytes})
          ON CONFLICT (target_pubkey) DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes`;
  sql.run`INSERT INTO sender_usage (sender_pubkey, target_pubkey, items, bytes) VALUES (${sender}, ${target}, ${items}, ${bytes})
          ON CONFLICT (sender_pubkey, target_pubkey) DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes`;
  if (account !== null) {
    sql.run`INSERT INTO account_usage (account, items, bytes) VALUES (${account}, ${items}, ${bytes})
            ON CONFLICT (account) DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes`;
  }
  // only a release can empty a counter (adding to one never does: that saves the hot push path three statements)
  if (sign === 1) return;
  sql.run`DELETE FROM queue_usage WHERE target_pubkey = ${target} AND items <= 0`;
  sql.run`DELETE FROM sender_usage WHERE sender_pubkey = ${sender} AND target_pubkey = ${target} AND items <= 0`;
  if (account !== null) sql.run`DELETE FROM account_usage WHERE account = ${account} AND items <= 0`;
}

/** The usage groups of a target's items with minSeq ≤ seq ≤ maxSeq (before removing or moving them). */
export function usageGroups(sql: SQLTagStore, target: string, minSeq: number, maxSeq: number): UsageGroup[] {
  const rows = sql.all`SELECT sender_pubkey, account, count(*) AS items, sum(bytes) AS bytes FROM items
                       WHERE target_pubkey = ${target} AND seq BETWEEN ${minSeq} AND ${maxSeq}
                       GROUP BY sender_pubkey, account`;
  return rows.map((row) => ({
    targetPubkey: target,
    senderPubkey: text(row, 'sender_pubkey'),
    account: textOrNull(row, 'account'),
    items: int(row, 'items'),
    bytes: int(row, 'bytes'),
  }));
}

export function usageReader(use: UseSql): UsageReader {
  return {
    async queue(targetPubkey) {
      return queueUsage(use(), targetPubkey);
    },
    async sender(senderPubkey, targetPubkey) {
      return senderUsage(use(), senderPubkey, targetPubkey);
    },
    async account(account) {
      return accountUsage(use(), account);
    },
  };
}
