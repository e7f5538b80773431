// Delivery receipts (T218). As recipient: every state change of a delivery of remote mail queues a
// signed receipt for the sending host. As sender: acceptReceipt keeps the best receipt per
// (message, recipient) for mail this host sent to that host, and status reports it.
import { splitQualifiedAddress } from '../../protocol/records/envelope.ts';
import {
  compareReceipts,
  parseReceiptWire,
  parseSignedReceipt,
  receiptItemId,
  receiptWire,
  signReceipt,
  verifyReceipt,
  type DeliveryReceipt,
} from '../../protocol/records/receipt.ts';
import { isoTime, localAddress, type HostNode } from './node.ts';
import type { DeliveryState, MessageRow } from '../store/mail-tables.ts';
import type { OutboxRow } from '../store/outbox-table.ts';
import { wakeFromReceiptNote, wakeText } from '../wake/wake-status.ts';

export type ReceiptResult = 'accepted' | 'duplicate' | 'stale' | `rejected:${string}`;

/**
 * Queues the signed receipt of a delivery's state change number `seq` (call inside the transaction
 * that moved the delivery). Only remote mail gets receipts; older queued ones for it are superseded.
 */
export function queueReceipt(
  node: HostNode,
  msg: Pick<MessageRow, 'id' | 'direction' | 'sender_host'>,
  agent: string,
  state: DeliveryState,
  note: string | null,
  seq: number,
): void {
  node.store.assertTransaction('queueing a receipt');
  if (msg.direction !== 'in') return;
  const now = node.nowMs();
  const rec: DeliveryReceipt = {
    v: 1,
    type: 'receipt',
    msg: msg.id,
    recipient: localAddress(node, agent),
    state,
    at: isoTime(now),
    seq,
    ...(note !== null ? { note } : {}),
  };
  node.store.outbox.supersedeReceipts(`receipt:${rec.msg}:${rec.recipient}:`, msg.sender_host, now);
  node.store.outbox.enqueue(
    {
      kind: 'receipt',
      item_id: receiptItemId(rec),
      msg_id: msg.id,
      peer_host: msg.sender_host,
      wire: receiptWire(signReceipt(rec, node.keys.hostKey)),
    },
    now,
  );
}

/**
 * Applies a receipt from a peer (`via` is the transport's authenticated caller, or null when the
 * record alone is the proof, as for relay items). Rank first, then seq.
 */
export function acceptReceipt(node: HostNode, signed: unknown, via: { transport: string; peerPubkey: string } | null): ReceiptResult {
  const { store } = node;
  const parsed = parseSignedReceipt(signed);
  if (parsed === null) return 'rejected:bad receipt';
  const rec = parsed.rec;
  const host = splitQualifiedAddress(rec.recipient)?.host;
  if (host === undefined) return 'rejected:bad receipt';
  const peer = store.peers.get(host);
  if (peer === undefined) return 'rejected:recipient host is not paired';
  if (via !== null && store.peers.byKey(via.peerPubkey)?.host !== host) return 'rejected:receipt is not from the recipient host';
  const keys = [peer.host_pubkey, ...store.peers.retiredKeys(host)];
  if (!keys.some((key) => verifyReceipt(parsed, key) !== null)) return 'rejected:bad signature';
  const msg = store.mail.message(rec.msg);
  const sentThere = msg?.direction === 'out' && store.outbox.forMessage(rec.msg).some((r) => r.peer_host === host);
  if (!sentThere) return `rejected:not mail this host sent to ${host}`;
  return store.transaction((): ReceiptResult => {
    const current = store.receipts.get(rec.msg, rec.recipient);
    const currentRec = current === undefined ? null : (parseReceiptWire(current.wire)?.rec ?? null);
    const verdict = compareReceipts(currentRec, rec);
    if (verdict === 'accepted') {
      store.receipts.put({
        msg_id: rec.msg,
        recipient: rec.recipient,
        peer_host: host,
        state: rec.state,
        seq: rec.seq,
        at: rec.at,
        note: rec.note ?? null,
        wire: receiptWire(parsed),
        received_at: node.nowMs(),
        wake: wakeFromReceiptNote(rec.state, rec.note),
      });
    }
    // Every receipt state is delivered or later: the host has the mail, so a row a relay accepted
    // and that waits for this is settled, whichever transport carried the receipt.
    store.outbox.settleByReceipt(rec.msg, host, node.nowMs());
    return verdict;
  });
}

export interface RecipientStatus {
  recipient: string;
  host: string;
  /** delivered/notified/read/acked from a receipt or the local mailbox; else the outbox row's state */
  state: string;
  at: string | null;
  note: string | null;
  /** the path this host's copy took: "local", "lan", "relay seq <n>", or null while it has not left */
  via: string | null;
  /**
   * how the recipient's agent was told: the wake paths that woke it ("hook", "channel, exec"), "none"
   * (with the loop guard's reason when it held the mail), or null when not known (a remote host that
   * did not say, or mail still travelling)
   */
  wake: string | null;
}

/** Outbox states a copy ends in without reaching its host: `status <id>` exits 1 when any copy is in one. */
export const FAILED_COPY_STATES: readonly string[] = ['rejected', 'undelivered', 'expired', 'unconfirmed'];

/** The recipients whose copy ended without reaching them. */
export function failedRecipients(status: MessageStatus): RecipientStatus[] {
  return status.recipients.filter((r) => FAILED_COPY_STATES.includes(r.state));
}

export interface MessageStatus {
  id: string;
  subject: string;
  recipients: RecipientStatus[];
}

/** The path a copy took: the relay (with its seq) once the relay accepted it, else the LAN once handed over. */
function pathOf(row: OutboxRow): string | null {
  if (row.relay_seq !== null) return `relay seq ${row.relay_seq}`;
  return row.transport === 'lan' ? 'lan' : null;
}

/** The mailboxes of this host that got message `id`, each with its delivery state and how its agent was woken. */
export function localRecipients(node: HostNode, id: string, via: 'local' | null): RecipientStatus[] {
  return node.store.mail.deliveriesOf(id).map((d) => ({
    recipient: localAddress(node, d.agent),
    host: node.config.host,
    state: d.state,
    at: isoTime(d.updated_at),
    note: d.note,
    via,
    wake: wakeText(node, id, d.agent),
  }));
}

/** Per recipient, the best known state of a message this host sent; null when it did not send it. */
export function messageStatus(node: HostNode, id: string): MessageStatus | null {
  const { store } = node;
  const msg = store.mail.message(id);
  if (msg === undefined || msg.direction !== 'out') return null;
  const recipients = localRecipients(node, id, 'local');
  const receipts = store.receipts.forMessage(id);
  for (const row of store.outbox.forMessage(id)) {
    const via = pathOf(row);
    const fromHost = receipts.filter((r) => r.peer_host === row.peer_host);
    if (fromHost.length === 0) {
      recipients.push({ recipient: `*@${row.peer_host}`, host: row.peer_host, state: row.state, at: null, note: row.last_error, via, wake: null });
    }
    for (const r of fromHost) recipients.push({ recipient: r.recipient, host: r.peer_host, state: r.state, at: r.at, note: r.note, via, wake: r.wake });
  }
  return { id, subject: msg.subject, recipients };
}
