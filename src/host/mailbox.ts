// An agent's mailbox: listing (which notifies), reading and acking. Deliveries move forward only:
// delivered → notified → read → acked; each move of remote mail queues a receipt.
import { RECEIPT_NOTE_MAX_CHARS } from '../protocol/records/receipt.ts';
import { HostError } from './core/host-error.ts';
import type { HostNode } from './core/node.ts';
import { queueReceipt } from './core/receipts.ts';
import { isMailboxHere } from './core/route.ts';
import { deliveryRank, type DeliveryState, type InboxRow, type MessageRow } from './store/mail-tables.ts';

/** Most messages one inbox listing returns. */
export const INBOX_PAGE_MAX = 500;

export class MailboxError extends HostError {}

/** The agent's mailbox must exist here. */
export function checkMailbox(node: HostNode, agent: string): void {
  if (!isMailboxHere(node, agent)) throw new MailboxError(`no agent "${agent}" on this host`, 'not-found');
}

/**
 * Moves one delivery to `state` if that is forward; returns whether it moved. The receipt carries
 * `note`, unless `receiptNote` says something for the sender alone (how a wake told the agent).
 */
export function advanceDelivery(node: HostNode, msg: MessageRow, agent: string, state: DeliveryState, note: string | null, receiptNote = note): boolean {
  const { store } = node;
  return store.transaction(() => {
    const current = store.mail.delivery(msg.id, agent);
    if (current === undefined || deliveryRank(state) <= deliveryRank(current.state)) return false;
    const seq = store.mail.advanceDelivery(msg.id, agent, state, note, node.nowMs());
    queueReceipt(node, msg, agent, state, receiptNote, seq);
    return true;
  });
}

export interface InboxQuery {
  includeAcked?: boolean;
  /** rows in the page, at most INBOX_PAGE_MAX */
  limit?: number;
  /** the oldest rows after this message id (the default: from the oldest), or the newest before it ('' for the newest of all) */
  cursor?: { after: string } | { before: string };
}

export interface InboxPage {
  /** oldest first */
  rows: InboxRow[];
  /** rows the listing matches in all (unacked, or all with includeAcked) */
  total: number;
  /** more rows lie beyond the page, in the direction it was taken (newer after, older before) */
  more: boolean;
}

/** One page of the agent's mail, oldest first; listing notifies the agent of what was only delivered. */
export function inboxPage(node: HostNode, agent: string, query: InboxQuery = {}): InboxPage {
  checkMailbox(node, agent);
  const limit = Math.min(query.limit ?? INBOX_PAGE_MAX, INBOX_PAGE_MAX);
  const includeAcked = query.includeAcked === true;
  const cursor = query.cursor ?? { after: '' };
  // one row more than asked tells whether there are more
  const taken = node.store.mail.inbox(agent, limit + 1, includeAcked, cursor);
  const page = taken.slice(0, limit);
  if (!('after' in cursor)) page.reverse();
  const rows = node.store.transaction(() =>
    page.map((row) => {
      if (row.state !== 'delivered') return row;
      advanceDelivery(node, row, agent, 'notified', null);
      return { ...row, state: 'notified' as const };
    }),
  );
  return { rows, total: node.store.mail.inboxCount(agent, includeAcked), more: taken.length > limit };
}

/** The agent's unacked (or all) mail, oldest first, at most `limit` (and INBOX_PAGE_MAX) rows. */
export function listInbox(node: HostNode, agent: string, includeAcked = false, limit = INBOX_PAGE_MAX): InboxRow[] {
  return inboxPage(node, agent, { includeAcked, limit }).rows;
}

/** Whether the sender asked for a reply: the envelope's flag, kept for mail written here and received alike. */
export function needsReply(msg: MessageRow): boolean {
  return msg.needs_reply === 1;
}

function deliveredMessage(node: HostNode, id: string, agent: string): MessageRow {
  checkMailbox(node, agent);
  const msg = node.store.mail.message(id);
  if (msg === undefined || node.store.mail.delivery(id, agent) === undefined)
    throw new MailboxError(`no message ${id} for ${agent}: take an id from the inbox`, 'not-found');
  return msg;
}

/** The message, marked read (unless `peek`: then nothing changes and the sender is told nothing). */
export function readMessage(node: HostNode, id: string, agent: string, peek = false): InboxRow {
  const msg = deliveredMessage(node, id, agent);
  if (!peek) advanceDelivery(node, msg, agent, 'read', null);
  const d = node.store.mail.delivery(id, agent);
  return { ...msg, agent, state: d?.state ?? 'read', note: d?.note ?? null };
}

/** Acks the message (read implied); false when it was acked before. */
export function ackMessage(node: HostNode, id: string, agent: string, note: string | null): boolean {
  if (note !== null && note.length > RECEIPT_NOTE_MAX_CHARS) throw new MailboxError(`the note is longer than ${RECEIPT_NOTE_MAX_CHARS} characters`);
  const msg = deliveredMessage(node, id, agent);
  return advanceDelivery(node, msg, agent, 'acked', note);
}
