// Usage counters in PostgreSQL (quotas, design §7): one row read per check, never a scan of a queue.
// The item primitives (items.ts) charge and release them in the statements that change items.
import type { Usage, UsageReader } from '../relay-store.ts';
import { int, type Row } from '../sqlite/columns.ts';
import type { TargetLocks } from './locks.ts';
import type { UsePg } from './sql.ts';

function usageOf(row: Row | undefined): Usage {
  return row === undefined ? { items: 0, bytes: 0 } : { items: int(row, 'items'), bytes: int(row, 'bytes') };
}

export function usageReader(use: UsePg): UsageReader {
  return {
    async queue(target) { return usageOf(await use().row('SELECT items, bytes FROM queue_usage WHERE target_pubkey = $1', [target])); },
    async sender(sender, target) {
      return usageOf(await use().row('SELECT items, bytes FROM sender_usage WHERE sender_pubkey = $1 AND target_pubkey = $2', [sender, target]));
    },
    async account(account) { return usageOf(await use().row('SELECT items, bytes FROM account_usage WHERE account = $1', [account])); },
  };
}

/** In a transaction, a quota read takes its target's or account's lock first (locks.ts): the check and the charge that follows are one step. */
export function usageTransactor(use: UsePg, locks: TargetLocks): UsageReader {
  const read = usageReader(use);
  return {
    async queue(target) {
      locks.target(target);
      return read.queue(target);
    },
    async sender(sender, target) {
      locks.target(target);
      return read.sender(sender, target);
    },
    async account(account) {
      locks.account(account);
      return read.account(account);
    },
  };
}
