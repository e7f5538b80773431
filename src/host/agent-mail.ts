// What an agent does with its mail beyond the mailbox moves: who vouches for a message, sending
// once per idempotency key, threads, search, its own agent row (the directory of agents is
// directory/). The CLI and the MCP server both call these.
import { fingerprint } from '../protocol/fingerprint.ts';
import { NAME_RE } from '../protocol/names.ts';
import { checkMailbox, MailboxError, needsReply } from './mailbox.ts';
import { messageStatus, type MessageStatus } from './core/receipts.ts';
import { localAddress, type HostNode } from './core/node.ts';
import { expandRoute, RESERVED_NAMES } from './core/route.ts';
import { sendMail, type SendRequest, type SendResult } from './send.ts';
import type { AgentMessageRow } from './store/agent-mail-tables.ts';
import type { DeliveryState, MessageRow } from './store/mail-tables.ts';

/** Most messages one thread, search or directory answer holds. */
export const THREAD_MAX = 500;
export const SEARCH_MAX = 100;
export const IDEMPOTENCY_KEY_MAX_CHARS = 200;
export const AGENT_DESCRIPTION_MAX_CHARS = 500;

export interface MessageView {
  id: string;
  from: string;
  to: string[];
  kind: string;
  subject: string;
  body?: string;
  thread: string;
  reply_to: string | null;
  ts: string;
  /** the reader's delivery state; null for mail it sent itself */
  state: DeliveryState | null;
  note: string | null;
  /** who vouches for the message: "local" or "signed by paired host X (fingerprint)" */
  trust: string;
  /** the envelope's meta (mentions, directives, tags, task_refs…); null for mail without one */
  meta: Record<string, unknown> | null;
  /** the sender asked for a reply */
  needs_reply: boolean;
  /** the envelope's references (URLs, paths, commit ids…), as the sender gave them */
  refs: string[];
}

/** "local" for mail written on this host; else the paired host whose key signed it. */
export function trustOf(node: HostNode, msg: MessageRow): string {
  if (msg.direction === 'out') return 'local';
  const peer = node.store.peers.get(msg.sender_host);
  if (peer === undefined) return `signed by host ${msg.sender_host}, which is no longer paired`;
  return `signed by paired host ${peer.host} (${fingerprint(peer.host_pubkey)})`;
}

export function messageView(node: HostNode, m: MessageRow & { state: DeliveryState | null; note: string | null }, withBody = true): MessageView {
  return {
    id: m.id,
    from: m.from_addr,
    to: JSON.parse(m.to_json) as string[],
    kind: m.kind,
    subject: m.subject,
    ...(withBody ? { body: m.body } : {}),
    thread: m.thread,
    reply_to: m.reply_to,
    ts: m.ts,
    state: m.state,
    note: m.note,
    trust: trustOf(node, m),
    meta: m.meta_json === null ? null : (JSON.parse(m.meta_json) as Record<string, unknown>),
    needs_reply: needsReply(m),
    refs: JSON.parse(m.refs_json) as string[],
  };
}

/** A message as text for a person or an agent: headers (with who vouches for it), then the body. */
export function messageText(m: MessageView): string {
  return (
    `From: ${m.from}\nVouched for by: ${m.trust}\nTo: ${m.to.join(', ')}\nDate: ${m.ts}\nKind: ${m.kind}\n${m.needs_reply ? 'Needs-Reply: yes\n' : ''}${m.refs.length === 0 ? '' : `Refs: ${m.refs.join(', ')}\n`}Subject: ${m.subject}\n` +
    `Id: ${m.id}  Thread: ${m.thread}\n\n${m.body ?? ''}`
  );
}

/** A name or role that breaks the naming rules (a usage error in the CLI). */
export class AgentNameError extends MailboxError {
  constructor(message: string) {
    super(message, 'invalid');
  }
}

/** Checks an agent name a person or agent picked for a new mailbox. */
function checkNewAgentName(name: string): void {
  if (!NAME_RE.test(name)) throw new AgentNameError(`bad agent name "${name}": 2-40 of a-z, 0-9 and -, starting with a letter or digit`);
  if (RESERVED_NAMES.includes(name)) throw new AgentNameError(`"${name}" is reserved: pick another agent name`);
}

export interface AgentSettings {
  role?: string | undefined;
  description?: string | undefined;
}

/** Creates the agent if it is new, then sets what `settings` gives; returns whether it was created. */
export function ensureAgent(node: HostNode, name: string, settings: AgentSettings = {}): boolean {
  const { role, description } = settings;
  if (role !== undefined && !NAME_RE.test(role)) throw new AgentNameError(`bad role "${role}": 2-40 of a-z, 0-9 and -`);
  if (description !== undefined && description.length > AGENT_DESCRIPTION_MAX_CHARS) {
    throw new MailboxError(`the description is longer than ${AGENT_DESCRIPTION_MAX_CHARS} characters`);
  }
  const { store } = node;
  return store.transaction(() => {
    const exists = store.mail.agent(name) !== undefined;
    if (!exists) checkNewAgentName(name);
    const created = store.mail.addAgent(name, role ?? null, node.nowMs());
    if (!created && role !== undefined) store.mail.setAgentRole(name, role);
    if (description !== undefined) store.agentMail.setDescription(name, description);
    return created;
  });
}

export type OnceResult = SendResult & { duplicate: boolean };

/**
 * Whether a send asks for what the message sent first under its key holds: to (as routed), subject,
 * body, kind and reply_to. A `to` that no longer routes (a peer unpaired since) is not compared.
 */
function samePayload(node: HostNode, first: MessageRow, req: SendRequest): boolean {
  const kind = req.kind ?? 'message';
  if (first.subject !== req.subject || first.body !== req.body || first.kind !== kind || first.reply_to !== (req.replyTo ?? null)) return false;
  // as send.ts fills them in: a request asks for a reply unless told otherwise; no refs is []
  if (first.needs_reply !== ((req.needsReply ?? kind === 'request') ? 1 : 0) || first.refs_json !== JSON.stringify(req.refs ?? [])) return false;
  let to: string[];
  try {
    to = expandRoute(node, req.from, req.to).to;
  } catch {
    return true;
  }
  const stored = (JSON.parse(first.to_json) as string[]).sort();
  return JSON.stringify([...to].sort()) === JSON.stringify(stored);
}

/** Sends, unless this agent already sent with `key`: then answers that first message's id. */
export function sendOnce(node: HostNode, req: SendRequest, key: string | null): OnceResult {
  if (key === null) return { ...sendMail(node, req), duplicate: false };
  if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX_CHARS) {
    throw new MailboxError(`the idempotency key must be 1-${IDEMPOTENCY_KEY_MAX_CHARS} characters`);
  }
  const { store } = node;
  return store.transaction(() => {
    const earlier = store.agentMail.sentWithKey(req.from, key);
    if (earlier !== undefined) {
      const first = store.mail.message(earlier);
      if (first !== undefined && !samePayload(node, first, req)) {
        throw new MailboxError(
          `the idempotency key "${key}" already sent ${earlier}, with other content: a retry must repeat the same to, subject, body, kind and reply_to; use a new key for a new message`,
        );
      }
      return { id: earlier, localAgents: [], remoteHosts: [], duplicate: true };
    }
    const sent = sendMail(node, req);
    store.agentMail.rememberKey(req.from, key, sent.id, node.nowMs());
    return { ...sent, duplicate: false };
  });
}

/** A message the agent sent or received. */
export function visibleMessage(node: HostNode, agent: string, id: string): AgentMessageRow {
  const row = node.store.agentMail.visibleMessage(agent, localAddress(node, agent), id);
  if (row === undefined) throw new MailboxError(`no message ${id} sent or received by ${agent}: take an id from the inbox or a search`);
  return row;
}

/** Every message of the thread `id` belongs to that the agent sent or received, oldest first. */
export function threadOf(node: HostNode, agent: string, id: string): MessageView[] {
  const start = visibleMessage(node, agent, id);
  return node.store.agentMail.thread(agent, localAddress(node, agent), start.thread, THREAD_MAX).map((m) => messageView(node, m));
}

/** Words of a free-text query as an FTS5 query that matches messages holding all of them. */
function ftsQuery(query: string): string {
  const words = query.match(/[\p{L}\p{N}_]+/gu) ?? [];
  if (words.length === 0) throw new MailboxError('the search query has no words: give one or more words to look for');
  return words.map((w) => `"${w}"`).join(' ');
}

/** The agent's mail whose subject or body holds every word of `query`, best matches first. */
export function searchMail(node: HostNode, agent: string, query: string, limit = SEARCH_MAX): MessageView[] {
  checkMailbox(node, agent);
  const rows = node.store.agentMail.search(agent, localAddress(node, agent), ftsQuery(query), Math.min(limit, SEARCH_MAX));
  return rows.map((m) => messageView(node, m));
}

/** Per recipient, how far a message the agent sent has got. */
export function sentStatus(node: HostNode, agent: string, id: string): MessageStatus {
  const msg = node.store.mail.message(id);
  const status = msg?.from_addr === localAddress(node, agent) ? messageStatus(node, id) : null;
  if (status === null) throw new MailboxError(`no message ${id} sent by ${agent}: give the id mbx_send answered`);
  return status;
}
