// The best delivery receipt per (message, recipient) for mail this host sent.
import type { Database } from './database.ts';

export interface ReceiptRow {
  msg_id: string;
  recipient: string;
  peer_host: string;
  state: string;
  seq: number;
  at: string;
  note: string | null;
  wire: string;
  received_at: number;
  /** how the recipient host said its agent was woken (a `notified` receipt's note); kept by later receipts */
  wake: string | null;
}

export class ReceiptsTable {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  get(msgId: string, recipient: string): ReceiptRow | undefined {
    return this.#db.get<ReceiptRow>('SELECT * FROM receipts WHERE msg_id = ? AND recipient = ?', msgId, recipient);
  }

  forMessage(msgId: string): ReceiptRow[] {
    return this.#db.all<ReceiptRow>('SELECT * FROM receipts WHERE msg_id = ? ORDER BY recipient', msgId);
  }

  /** Whether `host` ever sent this host a delivery receipt (hosts older than 0.5.3 never do). */
  anyFrom(host: string): boolean {
    return this.#db.get<{ one: number }>('SELECT 1 AS one FROM receipts WHERE peer_host = ? LIMIT 1', host) !== undefined;
  }

  put(r: ReceiptRow): void {
    this.#db.run(
      `INSERT INTO receipts (msg_id, recipient, peer_host, state, seq, at, note, wire, received_at, wake) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (msg_id, recipient) DO UPDATE SET peer_host = excluded.peer_host, state = excluded.state, seq = excluded.seq,
         at = excluded.at, note = excluded.note, wire = excluded.wire, received_at = excluded.received_at, wake = COALESCE(excluded.wake, wake)`,
      r.msg_id,
      r.recipient,
      r.peer_host,
      r.state,
      r.seq,
      r.at,
      r.note,
      r.wire,
      r.received_at,
      r.wake,
    );
  }
}
