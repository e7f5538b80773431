// What the owner may do to the host's plumbing beyond the mail itself, shared by every front end
// (the owner's page; a CLI command may call the same): try a waiting outbox row again now, dismiss
// a quarantined relay item. Each is one guarded statement: a row that moved on, or an item already
// gone, is answered as such and nothing else changes.
import { HostError } from './core/host-error.ts';
import type { HostNode } from './core/node.ts';
import type { QuarantineRow } from './store/relay-tables.ts';

/**
 * Makes the queued outbox row `rowId` due now, so the daemon's next tick (within about 2 s) offers
 * it, its backoff notwithstanding. Its attempts count and deadline are unchanged.
 */
export function retryRowNow(node: HostNode, rowId: number): void {
  if (!Number.isSafeInteger(rowId) || rowId < 1) throw new HostError(`bad outbox row "${String(rowId)}"`, 'invalid');
  if (!node.store.outbox.makeRowDueNow(rowId, node.nowMs())) {
    throw new HostError(`no queued outbox row ${rowId}: it was delivered or ended meanwhile`, 'not-found');
  }
}

export type QuarantineKey = Pick<QuarantineRow, 'relay_url' | 'epoch' | 'seq'>;

/**
 * Dismisses one item of the relay quarantine on the owner's word (`relay quarantine dismiss`, the
 * owner's page): it stays in the store (not applied, listed with --all) and no longer counts in
 * doctor. True when this call dismissed it, false when it was dismissed already (a second click or
 * command changes nothing and is no failure); an item that was never quarantined is not-found.
 */
export function dismissQuarantined(node: HostNode, key: QuarantineKey): boolean {
  if (node.store.relay.dismissQuarantined(key, node.nowMs())) return true;
  const known = node.store.relay.quarantinedAt(key.seq).some((row) => row.relay_url === key.relay_url && row.epoch === key.epoch);
  if (!known) throw new HostError(`no quarantined item seq ${key.seq} of epoch ${key.epoch}`, 'not-found');
  return false;
}
