// The ends of a relay-accepted row other than its delivery receipt (design §3, §6): the sender's own
// deadline (accepted_at + retention + 24 h → unconfirmed) and the relay's signed expiry notice
// (→ expired). Each alerts the local sender.
import { verifyExpiredNotice } from '../../../protocol/records/expired.ts';
import { alertLocal, senderOf } from '../../core/alerts.ts';
import type { HostNode } from '../../core/node.ts';
import { FLUSH_ROWS_MAX } from '../../core/outbox-pace.ts';
import type { ReceiveResult } from '../../core/receive.ts';
import { DEFAULT_RETENTION_MS } from '../../relay-client/session.ts';

/** Added to the relay's retention before the sender stops waiting for a delivery receipt. */
export const RELAY_DEADLINE_GRACE_MS = 24 * 60 * 60 * 1000;

/** Marks relay rows past their deadline unconfirmed and alerts their senders; returns how many. */
export function expireRelayDeadlines(node: HostNode): number {
  const now = node.nowMs();
  const retention = node.store.relay.get()?.retention_ms ?? DEFAULT_RETENTION_MS;
  let count = 0;
  for (const row of node.store.outbox.relayAcceptedBy(now - retention - RELAY_DEADLINE_GRACE_MS, FLUSH_ROWS_MAX)) {
    node.store.transaction(() => {
      if (!node.store.outbox.end(row.id, 'unconfirm', now, { error: 'no delivery receipt by the deadline' })) return;
      count++;
      const who = senderOf(node, row.msg_id);
      if (who === null || row.kind !== 'envelope') return;
      if (node.store.receipts.anyFrom(row.peer_host)) {
        alertLocal(
          node,
          who.agent,
          `Undelivered/unconfirmed to ${row.peer_host}: ${who.subject}`,
          `The relay accepted message ${row.item_id} for ${row.peer_host}, but no delivery receipt came before the deadline` +
            ' (relay retention + 24 h). It may not have arrived; it will not be retried.',
          row.msg_id,
        );
      } else {
        alertLocal(
          node,
          who.agent,
          `No delivery confirmation from ${row.peer_host}: ${who.subject}`,
          `The relay accepted message ${row.item_id} for ${row.peer_host}, and ${row.peer_host} has never sent a delivery receipt.` +
            ' It may run agentmbx older than 0.5.3, which sends none: the message may well have arrived, but nothing confirms it.',
          row.msg_id,
        );
      }
    });
  }
  return count;
}

/**
 * A relay expiry notice pulled from the queue (kind `expired`): the matching relay-accepted row
 * becomes expired and its sender gets "Undelivered to <host>". Call inside the item's transaction.
 */
export function applyExpiredNotice(node: HostNode, relayPubkey: string, senderPubkey: string, wire: Buffer): ReceiveResult {
  if (senderPubkey !== relayPubkey) return 'rejected:expiry notice not from the relay';
  const notice = verifyExpiredNotice(wire, relayPubkey);
  if (notice === null) return 'rejected:bad expiry notice';
  const peer = node.store.peers.byKey(notice.target_pubkey);
  const row = peer === undefined ? undefined : node.store.outbox.relayAcceptedRow(notice.item_id, peer.host);
  // Only the acceptance it is about: after a re-push the relay's item is a newer one.
  if (row === undefined || row.relay_accepted_at !== Date.parse(notice.accepted_at)) return 'duplicate';
  const now = node.nowMs();
  if (!node.store.outbox.end(row.id, 'expire', now, { error: `the relay expired it at ${notice.expired_at}` })) return 'duplicate';
  const who = senderOf(node, row.msg_id);
  if (who !== null) {
    alertLocal(
      node,
      who.agent,
      `Undelivered to ${row.peer_host}: ${who.subject}`,
      `Message ${row.item_id} waited on the relay until it expired (${notice.expired_at}) and ${row.peer_host} never picked it up. It will not be retried.`,
      row.msg_id,
    );
  }
  return 'accepted';
}
