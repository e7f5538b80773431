// What the owner's page shows (src/ui): every mailbox of this host, the newest threads across them
// with each message's delivery state per recipient, the host's alerts and bounces, peers and the
// relay, the quarantine and the waiting outbox rows. It only reads, through the same host operations
// the CLI uses (messageView, messageStatus, searchMail, outboxOverview, peerLanUnreachable): looking
// changes no delivery state (an owner's look is a peek). It shows the wake-up state too: per mailbox
// the wake paths that have told it (src/host/wake/), per recipient how its agent was woken, and the
// threads the loop guard holds with its budget and window (as `guard list`).
import { fingerprint } from '../protocol/fingerprint.ts';
import { messageView, searchMail, SEARCH_MAX, type MessageView } from './agent-mail.ts';
import { checkMailbox } from './mailbox.ts';
import { isoTime, localAddress, type HostNode } from './core/node.ts';
import { localRecipients, messageStatus, type RecipientStatus } from './core/receipts.ts';
import { OWNER, SYSTEM_SENDER } from './core/route.ts';
import type { MessageRow } from './store/mail-tables.ts';
import type { WakePath } from './store/wake-tables.ts';
import { guardOverview, type GuardOverview } from './wake/loop-guard.ts';
import { peerLanUnreachable } from './transport/row-path.ts';

/** Threads one view shows, the newest first. */
export const OWNER_THREADS_MAX = 50;
/** Messages shown per thread (its newest). */
export const OWNER_THREAD_MESSAGES_MAX = 50;
/** Alerts and bounces shown, the newest first. */
export const OWNER_ALERTS_MAX = 50;
/** Quarantined items, waiting outbox rows and threads the loop guard holds shown. */
export const OWNER_ROWS_MAX = 100;
/** Mailboxes shown (the owner's and the agents'). */
export const OWNER_AGENTS_MAX = 500;
/** Characters of a body shown in a thread before the message is opened. */
export const BODY_PREVIEW_CHARS = 160;

export interface MailboxSummary {
  name: string;
  address: string;
  role: string | null;
  unread: number;
  last_activity: string | null;
  /** each wake path that has looked at this mailbox's mail (none: no hook, channel or exec runs for it) */
  wake: WakePathState[];
}

export interface WakePathState {
  path: WakePath;
  /** when the path last told the agent (or recorded mail the loop guard held) */
  last_at: string;
  /** unread mail that came after that: the path has not told the agent of it yet */
  untold: number;
}

export type OwnerMessage = Omit<MessageView, 'state' | 'note'> & {
  preview: string;
  /** per recipient, how far it has got (mail sent here: as `status` says; mail received: each mailbox here) */
  recipients: RecipientStatus[];
};

export interface PeerSummary {
  host: string;
  fingerprint: string;
  addr: string;
  /** reachable, unreachable (a failed call since the last good one), or unknown (no call answered yet) */
  lan: 'reachable' | 'unreachable' | 'unknown';
  last_ok_at: string | null;
  last_error: string | null;
  enc_key: boolean;
}

export interface WaitingRow {
  row: number;
  kind: string;
  item_id: string;
  peer_host: string;
  attempts: number;
  queued_at: string;
  next_try_at: string;
  last_error: string | null;
}

export interface QuarantineItem {
  relay_url: string;
  epoch: string;
  seq: number;
  kind: string;
  item_id: string;
  sender: string;
  reason: string;
  at: string;
}

export interface OwnerView {
  host: string;
  fingerprint: string;
  mailboxes: MailboxSummary[];
  /** the mailbox the threads are narrowed to, or null for all */
  agent: string | null;
  threads: Array<{ thread: string; messages: OwnerMessage[] }>;
  alerts: OwnerMessage[];
  peers: PeerSummary[];
  relay: { url: string; state: string; cause: string | null; fingerprint: string } | null;
  quarantine: QuarantineItem[];
  waiting: WaitingRow[];
  /** the loop guard: its budget and window, and the threads whose wakes it stopped (at most OWNER_ROWS_MAX) */
  guard: GuardOverview;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms);
}

/** Each mailbox of this host: the owner's first, then the agents by name. */
export function mailboxes(node: HostNode): MailboxSummary[] {
  const names = [{ name: OWNER, role: null as string | null }, ...node.store.mail.agents().map((a) => ({ name: a.name, role: a.role }))];
  return names.slice(0, OWNER_AGENTS_MAX).map(({ name, role }) => {
    const address = localAddress(node, name);
    const activity = node.store.overview.activity(name, address);
    const wake = node.store.wake.cursorsOf(name).map((c) => ({ path: c.path, last_at: isoTime(c.updated_at), untold: c.untold }));
    return { name, address, role, unread: activity.unread, last_activity: iso(activity.last_activity), wake };
  });
}

/** Per recipient, the delivery state of a message: `status`'s answer for mail sent here, the mailboxes' own for mail received. */
function recipientsOf(node: HostNode, msg: MessageRow): RecipientStatus[] {
  if (msg.direction === 'out') return messageStatus(node, msg.id)?.recipients ?? [];
  return localRecipients(node, msg.id, null);
}

/** A message as the owner sees it; with `withBody` its whole body, else a preview. Reading it changes nothing. */
export function ownerMessage(node: HostNode, msg: MessageRow, withBody = false): OwnerMessage {
  const { state: _state, note: _note, ...view } = messageView(node, { ...msg, state: null, note: null }, withBody);
  const preview = msg.body.length > BODY_PREVIEW_CHARS ? `${msg.body.slice(0, BODY_PREVIEW_CHARS)}…` : msg.body;
  return { ...view, preview, recipients: recipientsOf(node, msg) };
}

/** One message of this host by id, with its body (a peek: no state moves), or null. */
export function openMessage(node: HostNode, id: string): OwnerMessage | null {
  const msg = node.store.mail.message(id);
  return msg === undefined ? null : ownerMessage(node, msg, true);
}

/** Mail of `agent` (or of every mailbox here, each search being the agent's own) holding every word of `query`. */
export function searchAll(node: HostNode, query: string, agent: string | null): OwnerMessage[] {
  const names = agent === null ? mailboxes(node).map((m) => m.name) : [agent];
  const seen = new Set<string>();
  const found: OwnerMessage[] = [];
  for (const name of names) {
    for (const view of searchMail(node, name, query)) {
      if (seen.has(view.id) || found.length >= SEARCH_MAX) continue;
      seen.add(view.id);
      const msg = node.store.mail.message(view.id);
      if (msg !== undefined) found.push(ownerMessage(node, msg));
    }
  }
  return found;
}

/** Everything the owner's page shows, narrowed to one mailbox's threads when `agent` is given. */
export function ownerView(node: HostNode, agent: string | null): OwnerView {
  const { store } = node;
  if (agent !== null) checkMailbox(node, agent);
  const now = node.nowMs();
  const narrowTo = agent === null ? null : { name: agent, address: localAddress(node, agent) };
  const threads = store.overview.newestThreads(OWNER_THREADS_MAX, narrowTo).map((thread) => ({
    thread,
    messages: store.overview.threadMessages(thread, OWNER_THREAD_MESSAGES_MAX).map((m) => ownerMessage(node, m)),
  }));
  const relay = store.relay.get();
  const guard = guardOverview(store);
  return {
    host: node.config.host,
    fingerprint: fingerprint(node.keys.hostKey.publicKey),
    mailboxes: mailboxes(node),
    agent,
    threads,
    alerts: store.overview.systemMail(SYSTEM_SENDER, OWNER_ALERTS_MAX).map((m) => ownerMessage(node, m)),
    peers: store.peers.list().map((p) => ({
      host: p.host,
      fingerprint: fingerprint(p.host_pubkey),
      addr: p.addr,
      lan: peerLanUnreachable(p, now) ? 'unreachable' : p.last_ok_at === null ? 'unknown' : 'reachable',
      last_ok_at: iso(p.last_ok_at),
      last_error: p.last_error,
      enc_key: p.enc_pub !== null,
    })),
    relay: relay === undefined ? null : { url: relay.url, state: relay.state, cause: relay.detail, fingerprint: fingerprint(relay.relay_pubkey) },
    quarantine: store.relay.quarantined(OWNER_ROWS_MAX, false).map((q) => ({
      relay_url: q.relay_url,
      epoch: q.epoch,
      seq: q.seq,
      kind: q.kind,
      item_id: q.item_id,
      sender: fingerprint(q.sender_pubkey),
      reason: q.reason,
      at: isoTime(q.at),
    })),
    waiting: store.overview.queuedRows(OWNER_ROWS_MAX).map((r) => ({
      row: r.id,
      kind: r.kind,
      item_id: r.item_id,
      peer_host: r.peer_host,
      attempts: r.attempts,
      queued_at: isoTime(r.created_at),
      next_try_at: isoTime(r.next_at),
      last_error: r.last_error,
    })),
    guard: { ...guard, held: guard.held.slice(0, OWNER_ROWS_MAX) },
  };
}
