// Noticing new mail for an agent without asking the daemon: a cheap look at SQLite's data_version
// (it changes when another connection commits to the store) and, only then, at the agent's newest
// delivery. Mail committed through this process's own connection is seen through `check()`.
// The look runs as soon as the store's WAL file changes (a file-system notification: inotify,
// FSEvents), so new mail is seen within milliseconds of its commit; every MAIL_WATCH_INTERVAL_MS as
// well, for file systems that notify nothing (network mounts).
import { watch as watchFile, type FSWatcher } from 'node:fs';
import { homePaths } from './core/identity.ts';
import type { HostNode } from './core/node.ts';

/** How often the store is looked at: well inside the 2 s a wake-up may take. */
export const MAIL_WATCH_INTERVAL_MS = 250;
/** Most new deliveries one look hands over; the rest come on the next look. */
export const MAIL_WATCH_BATCH_MAX = 100;
/** Longest wait for unread mail an agent may ask for. */
export const MAIL_WAIT_MAX_MS = 10 * 60_000;

export interface MailWatch {
  /** looks now (after a commit of this process's own) */
  check(): void;
  stop(): void;
}

/** Calls `onNew` with the ids of deliveries to `agent` made after the watch started, oldest first. */
export function watchDeliveries(node: HostNode, agent: string, onNew: (msgIds: string[]) => void, intervalMs = MAIL_WATCH_INTERVAL_MS): MailWatch {
  const tables = node.store.agentMail;
  let mark = tables.deliveryMark(agent);
  let version = tables.dataVersion();
  let more = false;
  const look = (force: boolean): void => {
    const now = tables.dataVersion();
    if (!force && !more && now === version) return;
    version = now;
    const rows = tables.deliveriesAfter(agent, mark, MAIL_WATCH_BATCH_MAX);
    more = rows.length === MAIL_WATCH_BATCH_MAX;
    const last = rows.at(-1);
    if (last === undefined) return;
    mark = last.mark;
    onNew(rows.map((r) => r.msg_id));
  };
  const timer = setInterval(() => look(false), intervalMs);
  const changes = watchWal(node, () => look(false));
  return {
    check: () => look(true),
    stop: () => {
      clearInterval(timer);
      changes?.close();
    },
  };
}

/** Calls `onChange` (at most once per event-loop turn) when the store's WAL file changes; null where it cannot be watched. */
function watchWal(node: HostNode, onChange: () => void): FSWatcher | null {
  let scheduled = false;
  try {
    const watcher = watchFile(`${homePaths(node.home).store}-wal`, { persistent: false }, () => {
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        onChange();
      });
    });
    // a watcher that fails (the file replaced, a limit reached) leaves the interval to look
    watcher.on('error', () => watcher.close());
    return watcher;
  } catch {
    return null;
  }
}

/**
 * Resolves true as soon as `agent` has unread mail, false after `timeoutMs` (at most
 * MAIL_WAIT_MAX_MS) or when `signal` aborts.
 */
export function waitForUnread(node: HostNode, agent: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
  if (node.store.agentMail.unreadCount(agent) > 0) return Promise.resolve(true);
  if (signal?.aborted === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    const finish = (found: boolean): void => {
      watch.stop();
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(found);
    };
    const onAbort = (): void => finish(false);
    const watch = watchDeliveries(node, agent, () => {
      if (node.store.agentMail.unreadCount(agent) > 0) finish(true);
    });
    const timer = setTimeout(() => finish(false), Math.min(Math.max(timeoutMs, 0), MAIL_WAIT_MAX_MS));
    signal?.addEventListener('abort', onAbort);
  });
}
