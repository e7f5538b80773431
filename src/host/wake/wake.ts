// The one place that decides what is new for an agent and whether it may be woken for it. Every
// wake path (Claude Code hooks, the MCP channel, watch --exec) asks here: per agent and path a
// durable cursor over the agent's deliveries says what that path has told it; each new unread
// delivery goes through the loop guard; committing a batch moves the cursor, records the outcome per
// message (woken by the path, or held and why) and moves a delivered message to `notified`, whose
// receipt tells a remote sender how its mail was noticed ("woken by <path>").
import { escapeInLine } from '../../common/terminal-text.ts';
import { trustOf } from '../agent-mail.ts';
import { advanceDelivery, needsReply } from '../mailbox.ts';
import type { HostNode } from '../core/node.ts';
import { WAKE_PATHS, type WakeDeliveryRow, type WakePath } from '../store/wake-tables.ts';
import { guardVerdict } from './loop-guard.ts';

export { WAKE_PATHS, type WakePath };

/** Most deliveries one look at an agent's new mail takes; the rest come with the next look. */
export const WAKE_BATCH_MAX = 100;

/** What a wake tells about a message: never its body (that is data another agent wrote). */
export interface WakeNotice {
  id: string;
  from: string;
  trust: string;
  subject: string;
  thread: string;
  kind: string;
  needs_reply: boolean;
  ts: string;
}

export interface WakeItem {
  row: WakeDeliveryRow;
  notice: WakeNotice;
}

export interface WakeBatch {
  agent: string;
  path: WakePath;
  /** unread mail the agent may be woken for, oldest first */
  woken: WakeItem[];
  /** unread mail the loop guard holds: no wake, the reason recorded */
  held: { row: WakeDeliveryRow; reason: string }[];
  /** the path's cursor once this batch is committed */
  through: number;
}

/** `new`: unread mail after the path's cursor; `unread`: all the agent's unread mail (a new session knows nothing yet). */
export type WakeScope = 'new' | 'unread';

function noticeOf(node: HostNode, row: WakeDeliveryRow): WakeNotice {
  return {
    id: row.id,
    from: row.from_addr,
    trust: trustOf(node, row),
    subject: row.subject,
    thread: row.thread,
    kind: row.kind,
    needs_reply: needsReply(row),
    ts: row.ts,
  };
}

/** What `path` would wake `agent` for now (the guard may trip here). Nothing is marked until commitWake. */
export function pendingWake(node: HostNode, agent: string, path: WakePath, scope: WakeScope = 'new', limit = WAKE_BATCH_MAX): WakeBatch {
  const { store } = node;
  return store.transaction(() => {
    const cursor = store.wake.cursor(agent, path);
    const rows =
      scope === 'new' ? store.wake.deliveriesAfter(agent, cursor, Math.min(limit, WAKE_BATCH_MAX)) : store.wake.unread(agent, Math.min(limit, WAKE_BATCH_MAX));
    const batch: WakeBatch = { agent, path, woken: [], held: [], through: Math.max(cursor, ...rows.map((r) => r.mark)) };
    for (const row of rows) {
      // read or acked already: the agent knows it; the cursor passes it
      if (row.state !== 'delivered' && row.state !== 'notified') continue;
      const verdict = guardVerdict(node, row, agent);
      if (verdict.wake) batch.woken.push({ row, notice: noticeOf(node, row) });
      else batch.held.push({ row, reason: verdict.reason });
    }
    return batch;
  });
}

/** Records that `batch` was told (or held): cursor, outcome per message, delivered → notified. */
export function commitWake(node: HostNode, batch: WakeBatch, woken: readonly WakeItem[] = batch.woken): void {
  const { store } = node;
  const now = node.nowMs();
  store.transaction(() => {
    store.wake.advanceCursor(batch.agent, batch.path, batch.through, now);
    for (const { row } of woken) {
      store.wake.recordOutcome({ msg_id: row.id, agent: batch.agent, path: batch.path, woke: 1, detail: null, at: now });
      advanceDelivery(node, row, batch.agent, 'notified', null, `woken by ${batch.path}`);
    }
    for (const { row, reason } of batch.held) {
      store.wake.recordOutcome({ msg_id: row.id, agent: batch.agent, path: batch.path, woke: 0, detail: reason, at: now });
    }
  });
}

/**
 * Whether `path` may have something to tell `agent`: a read without a transaction, so that a look
 * that finds nothing (most hook runs) takes no write lock.
 */
export function mayHaveNews(node: HostNode, agent: string, path: WakePath, scope: WakeScope = 'new'): boolean {
  const { wake } = node.store;
  return scope === 'new' ? wake.deliveriesAfter(agent, wake.cursor(agent, path), 1).length > 0 : wake.unread(agent, 1).length > 0;
}

/** pendingWake and commitWake in one transaction: for paths that tell as they look (hooks, channel). */
export function takeWake(node: HostNode, agent: string, path: WakePath, scope: WakeScope = 'new', limit = WAKE_BATCH_MAX): WakeBatch {
  if (!mayHaveNews(node, agent, path, scope)) return { agent, path, woken: [], held: [], through: node.store.wake.cursor(agent, path) };
  return node.store.transaction(() => {
    const batch = pendingWake(node, agent, path, scope, limit);
    commitWake(node, batch);
    return batch;
  });
}

/** One line about a message for an agent's context: id, sender, who vouches, subject (escaped), never the body. */
export function noticeLine(n: WakeNotice): string {
  return `${n.id} from ${escapeInLine(n.from)} (${n.trust}): ${escapeInLine(n.subject)}${n.needs_reply ? ' [needs reply]' : ''}`;
}
