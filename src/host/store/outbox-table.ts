// The outbox: one row per item and destination host. Rows are never deleted: a row leaves the
// active set ('queued') only when a transport settles it, and stays as the record of the send.
import type { Database } from './database.ts';

export const OUTBOX_KINDS = ['envelope', 'receipt', 'rotation'] as const;
export type OutboxKind = (typeof OUTBOX_KINDS)[number];

/**
 * queued: waiting for a transport; handed-over: the peer answered accepted/duplicate;
 * rejected: the peer refused it for good; undelivered: given up after the deadline;
 * superseded: a newer receipt for the same delivery replaced it before it left.
 */
export type OutboxState = 'queued' | 'handed-over' | 'rejected' | 'undelivered' | 'superseded';

export interface OutboxRow {
  id: number;
  kind: OutboxKind;
  item_id: string;
  msg_id: string | null;
  peer_host: string;
  wire: string;
  state: OutboxState;
  transport: string | null;
  attempts: number;
  next_at: number;
  created_at: number;
  settled_at: number | null;
  last_error: string | null;
}

export interface NewOutboxRow {
  kind: OutboxKind;
  item_id: string;
  msg_id: string | null;
  peer_host: string;
  wire: string;
}

export class OutboxTable {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Queues a row, due now; the same (kind, item, host) queued twice stays one row. */
  enqueue(row: NewOutboxRow, nowMs: number): void {
    this.#db.run(
      `INSERT OR IGNORE INTO outbox (kind, item_id, msg_id, peer_host, wire, state, next_at, created_at)
       VALUES (?, ?, ?, ?, ?, 'queued', ?, ?)`,
      row.kind, row.item_id, row.msg_id, row.peer_host, row.wire, nowMs, nowMs,
    );
  }

  /** Queued rows whose time has come, oldest first. */
  due(nowMs: number, limit: number): OutboxRow[] {
    return this.#db.all<OutboxRow>(
      "SELECT * FROM outbox WHERE state = 'queued' AND next_at <= ? ORDER BY id LIMIT ?", nowMs, limit,
    );
  }

  /** Queued rows created before `cutoffMs` (for the delivery deadline). */
  queuedBefore(kind: OutboxKind, cutoffMs: number, limit: number): OutboxRow[] {
    return this.#db.all<OutboxRow>(
      "SELECT * FROM outbox WHERE state = 'queued' AND kind = ? AND created_at < ? ORDER BY id LIMIT ?", kind, cutoffMs, limit,
    );
  }

  get(id: number): OutboxRow | undefined {
    return this.#db.get<OutboxRow>('SELECT * FROM outbox WHERE id = ?', id);
  }

  forMessage(msgId: string): OutboxRow[] {
    return this.#db.all<OutboxRow>("SELECT * FROM outbox WHERE msg_id = ? AND kind = 'envelope' ORDER BY peer_host", msgId);
  }

  /** Settles a queued row; false when it was no longer queued (settled by someone else). */
  settle(id: number, state: Exclude<OutboxState, 'queued'>, transport: string | null, error: string | null, nowMs: number): boolean {
    return this.#db.run(
      "UPDATE outbox SET state = ?, transport = ?, last_error = ?, settled_at = ? WHERE id = ? AND state = 'queued'",
      state, transport, error, nowMs, id,
    ).changes > 0;
  }

  /** Records a failed attempt and when to try again. */
  retryLater(id: number, error: string, nextAtMs: number): void {
    this.#db.run(
      "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_at = ? WHERE id = ? AND state = 'queued'",
      error, nextAtMs, id,
    );
  }

  /** Makes every waiting row for `host` due now (the peer just proved it is up). */
  makeDueNow(host: string, nowMs: number): number {
    return this.#db.run("UPDATE outbox SET next_at = ? WHERE peer_host = ? AND state = 'queued' AND next_at > ?", nowMs, host, nowMs).changes;
  }

  /** Marks queued receipts of one delivery as replaced by a newer one. */
  supersedeReceipts(itemPrefix: string, host: string, nowMs: number): void {
    this.#db.run(
      "UPDATE outbox SET state = 'superseded', settled_at = ? WHERE kind = 'receipt' AND state = 'queued' AND peer_host = ? AND substr(item_id, 1, length(?)) = ?",
      nowMs, host, itemPrefix, itemPrefix,
    );
  }

  /** Queued rows grouped by age, for doctor. */
  queuedAges(nowMs: number): Array<{ kind: string; peer_host: string; count: number; oldest: number }> {
    return this.#db.all(
      "SELECT kind, peer_host, COUNT(*) AS count, MIN(created_at) AS oldest FROM outbox WHERE state = 'queued' GROUP BY kind, peer_host ORDER BY oldest",
    ).map((r) => r as { kind: string; peer_host: string; count: number; oldest: number }).map((r) => ({ ...r, oldest: nowMs - r.oldest }));
  }

  countByState(state: OutboxState, kind: OutboxKind): number {
    return this.#db.get<{ n: number }>('SELECT COUNT(*) AS n FROM outbox WHERE state = ? AND kind = ?', state, kind)?.n ?? 0;
  }
}
