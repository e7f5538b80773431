// What a stored row means, for both SQL backends: the mappers from rows to the store's records, and
// the page rule every backend pulls by. A schema change touches the mapper here once.
import type { DenyEntry, DenyKind } from '../accounts.ts';
import type { Enrolment, ItemHeader, ItemKind, PulledItem } from '../relay-store.ts';
import { blob, int, intOrNull, text, textOrNull, type Row } from './columns.ts';

export function enrolmentFrom(row: Row): Enrolment {
  return {
    hostPubkey: text(row, 'host_pubkey'),
    hostName: text(row, 'host_name'),
    ownerFp: text(row, 'owner_fp'),
    account: textOrNull(row, 'account'),
    org: textOrNull(row, 'org'),
    authorizedBy: text(row, 'authorized_by'),
    enrolledAt: int(row, 'enrolled_at'),
    revokedAt: intOrNull(row, 'revoked_at'),
  };
}

export function denyFrom(row: Row): DenyEntry {
  return {
    kind: text(row, 'kind') as DenyKind,
    value: text(row, 'value'),
    reason: text(row, 'reason'),
    untilMs: int(row, 'until_ms'),
    addedAt: int(row, 'added_at'),
  };
}

export function kindFrom(row: Row): ItemKind {
  const kind = text(row, 'kind');
  if (kind !== 'envelope' && kind !== 'receipt' && kind !== 'expired') throw new Error(`relay store damaged: item kind ${kind}`);
  return kind;
}

export function headerFrom(row: Row): ItemHeader {
  return {
    targetPubkey: text(row, 'target_pubkey'),
    seq: int(row, 'seq'),
    kind: kindFrom(row),
    itemId: text(row, 'item_id'),
    senderPubkey: text(row, 'sender_pubkey'),
    wireHash: text(row, 'wire_hash'),
    bytes: int(row, 'bytes'),
    acceptedAt: int(row, 'accepted_at'),
    expiresAt: int(row, 'expires_at'),
  };
}

/**
 * How many of `sizes` (seq, bytes rows in seq order, one more than `limit` read to tell whether
 * more remain) make the page: at most `limit`, stopping before the one that would pass `maxBytes`,
 * but at least one. Every backend pages alike.
 */
export function pageLength(sizes: Row[], limit: number, maxBytes: number): number {
  let count = 0;
  let total = 0;
  for (const row of sizes.slice(0, limit)) {
    const bytes = int(row, 'bytes');
    if (count > 0 && total + bytes > maxBytes) break;
    count += 1;
    total += bytes;
  }
  return count;
}

export function pulledFrom(row: Row): PulledItem {
  return { seq: int(row, 'seq'), kind: kindFrom(row), itemId: text(row, 'item_id'), senderPubkey: text(row, 'sender_pubkey'), wire: blob(row, 'wire') };
}
