// Read-only looks across every mailbox of this host, for the owner's page (src/ui): agents with
// their unread counts and last activity, the newest threads, alerts and bounces, waiting outbox
// rows. Nothing here writes; the page changes the store only through host operations.
import type { Database } from './database.ts';
import type { MessageRow } from './mail-tables.ts';
import type { OutboxRow } from './outbox-table.ts';

export interface MailboxActivityRow {
  agent: string;
  unread: number;
  /** the newest message it sent or received (ms since the epoch), or null */
  last_activity: number | null;
}

export class OverviewTables {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Unread deliveries and the newest message sent or received by the mailbox `agent` (address `address`). */
  activity(agent: string, address: string): MailboxActivityRow {
    const row = this.#db.get<{ unread: number; last_in: number | null; last_out: number | null }>(
      `SELECT (SELECT COUNT(*) FROM deliveries WHERE agent = ?1 AND state IN ('delivered', 'notified')) AS unread,
              (SELECT MAX(m.created_at) FROM deliveries d JOIN messages m ON m.id = d.msg_id WHERE d.agent = ?1) AS last_in,
              (SELECT MAX(created_at) FROM messages WHERE from_addr = ?2) AS last_out`,
      agent,
      address,
    );
    const times = [row?.last_in ?? null, row?.last_out ?? null].filter((t): t is number => t !== null);
    return { agent, unread: row?.unread ?? 0, last_activity: times.length === 0 ? null : Math.max(...times) };
  }

  /** The threads with the newest messages, newest first: every thread, or those `agent` (address) sent or received mail in. */
  newestThreads(limit: number, agent: { name: string; address: string } | null): string[] {
    if (agent === null) {
      return this.#db.all<{ thread: string }>('SELECT thread FROM messages GROUP BY thread ORDER BY MAX(id) DESC LIMIT ?', limit).map((r) => r.thread);
    }
    return this.#db
      .all<{ thread: string }>(
        `SELECT m.thread FROM messages m WHERE m.from_addr = ?2 OR EXISTS (SELECT 1 FROM deliveries d WHERE d.msg_id = m.id AND d.agent = ?1)
       GROUP BY m.thread ORDER BY MAX(m.id) DESC LIMIT ?3`,
        agent.name,
        agent.address,
        limit,
      )
      .map((r) => r.thread);
  }

  /** A thread's messages, oldest first (the newest `limit` of them). */
  threadMessages(thread: string, limit: number): MessageRow[] {
    return this.#db.all<MessageRow>('SELECT * FROM (SELECT * FROM messages WHERE thread = ? ORDER BY id DESC LIMIT ?) ORDER BY id', thread, limit);
  }

  /** Mail from the system sender `name` of any host (ours, or a peer's bouncing our mail), newest first. */
  systemMail(name: string, limit: number): MessageRow[] {
    return this.#db.all<MessageRow>("SELECT * FROM messages WHERE substr(from_addr, 1, length(?1) + 1) = ?1 || '@' ORDER BY id DESC LIMIT ?2", name, limit);
  }

  /** Rows still queued, the longest-waiting first. */
  queuedRows(limit: number): OutboxRow[] {
    return this.#db.all<OutboxRow>("SELECT * FROM outbox WHERE state = 'queued' ORDER BY created_at, id LIMIT ?", limit);
  }
}
