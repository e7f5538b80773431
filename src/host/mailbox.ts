// An agent's mailbox: listing (which notifies), reading and acking. Deliveries move forward only:
// delivered → notified → read → acked; each move of remote mail queues a receipt.
import { RECEIPT_NOTE_MAX_CHARS } from '../protocol/records/receipt.ts';
import { HostError } from './host-error.ts';
import type { HostNode } from './node.ts';
import { queueReceipt } from './receipts.ts';
import { OWNER } from './route.ts';
import { deliveryRank, type DeliveryState, type InboxRow, type MessageRow } from './store/mail-tables.ts';

/** Most messages one inbox listing returns. */
export const INBOX_PAGE_MAX = 500;

export class MailboxError extends HostError {}

function checkMailbox(node: HostNode, agent: string): void {
  if (agent !== OWNER && node.store.mail.agent(agent) === undefined) throw new MailboxError(`no agent "${agent}" on this host`, 'not-found');
}

/** Moves one delivery to `state` if that is forward; returns whether it moved. */
export function advanceDelivery(node: HostNode, msg: MessageRow, agent: string, state: DeliveryState, note: string | null): boolean {
  const { store } = node;
  return store.transaction(() => {
    const current = store.mail.delivery(msg.id, agent);
    if (current === undefined || deliveryRank(state) <= deliveryRank(current.state)) return false;
    const seq = store.mail.advanceDelivery(msg.id, agent, state, note, node.nowMs());
    queueReceipt(node, msg, agent, state, note, seq);
    return true;
  });
}

/** The agent's unacked mail, oldest first; listing notifies the agent of what was only delivered. */
export function listInbox(node: HostNode, agent: string, includeAcked = false): InboxRow[] {
  checkMailbox(node, agent);
  const rows = node.store.mail.inbox(agent, INBOX_PAGE_MAX, includeAcked);
  return node.store.transaction(() => rows.map((row) => {
    if (row.state !== 'delivered') return row;
    advanceDelivery(node, row, agent, 'notified', null);
    return { ...row, state: 'notified' as const };
  }));
}

function deliveredMessage(node: HostNode, id: string, agent: string): MessageRow {
  checkMailbox(node, agent);
  const msg = node.store.mail.message(id);
  if (msg === undefined || node.store.mail.delivery(id, agent) === undefined) throw new MailboxError(`no message ${id} for ${agent}`, 'not-found');
  return msg;
}

/** The message, marked read. */
export function readMessage(node: HostNode, id: string, agent: string): InboxRow {
  const msg = deliveredMessage(node, id, agent);
  advanceDelivery(node, msg, agent, 'read', null);
  const d = node.store.mail.delivery(id, agent);
  return { ...msg, agent, state: d?.state ?? 'read', note: d?.note ?? null };
}

/** Acks the message (read implied); false when it was acked before. */
export function ackMessage(node: HostNode, id: string, agent: string, note: string | null): boolean {
  if (note !== null && note.length > RECEIPT_NOTE_MAX_CHARS) throw new MailboxError(`the note is longer than ${RECEIPT_NOTE_MAX_CHARS} characters`);
  const msg = deliveredMessage(node, id, agent);
  return advanceDelivery(node, msg, agent, 'acked', note);
}
