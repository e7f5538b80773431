// Agents, messages and deliveries (the mailboxes).
import type { UnsignedEnvelopeV3 } from '../../protocol/records/envelope.ts';
import type { Database } from './database.ts';

export const DELIVERY_STATES = ['delivered', 'notified', 'read', 'acked'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export function deliveryRank(state: string): number {
  return DELIVERY_STATES.indexOf(state as DeliveryState);
}

export interface AgentRow {
  name: string;
  role: string | null;
  created_at: number;
}

/** 'out': written on this host (to local and/or remote agents); 'in': received from a peer. */
export type MessageDirection = 'in' | 'out';

export interface MessageRow {
  id: string;
  direction: MessageDirection;
  from_addr: string;
  sender_host: string;
  to_json: string;
  thread: string;
  reply_to: string | null;
  kind: string;
  subject: string;
  body: string;
  ts: string;
  wire: string | null;
  /** the envelope's `meta` as JSON; null for the host's own alerts (no envelope) and mail sent before schema 4 */
  meta_json: string | null;
  created_at: number;
  /** 1: the envelope asked for a reply (schema 10; the same for mail written here and received) */
  needs_reply: number;
  /** the envelope's refs as a JSON array (schema 10) */
  refs_json: string;
}

export interface DeliveryRow {
  msg_id: string;
  agent: string;
  state: DeliveryState;
  note: string | null;
  receipt_seq: number;
  updated_at: number;
}

/**
 * The messages row of an envelope, its body opened: one mapping for mail written here (`out`, no
 * wire kept: each host's copy is sealed apart) and mail received (`in`, its wire kept as it came).
 */
export function envelopeRow(
  env: UnsignedEnvelopeV3,
  direction: MessageDirection,
  senderHost: string,
  body: string,
  wire: string | null,
  nowMs: number,
): MessageRow {
  return {
    id: env.id,
    direction,
    from_addr: env.from,
    sender_host: senderHost,
    to_json: JSON.stringify(env.to),
    thread: env.thread,
    reply_to: env.reply_to,
    kind: env.kind,
    subject: env.subject,
    body,
    ts: env.ts,
    wire,
    meta_json: JSON.stringify(env.meta),
    created_at: nowMs,
    needs_reply: env.needs_reply ? 1 : 0,
    refs_json: JSON.stringify(env.refs),
  };
}

export type InboxRow = MessageRow & { state: DeliveryState; note: string | null; agent: string };

/** A messages row as SQLite hands it back: the body is stored as UTF-8 bytes (a BLOB; schema 7). */
export type StoredMessageRow<T extends MessageRow> = Omit<T, 'body'> & { body: Uint8Array | string };

/**
 * The body back as text. It is stored as a BLOB because node:sqlite reads TEXT only up to the first
 * U+0000; bytes written by insertMessage are always valid UTF-8.
 */
export function withBodyText<T extends MessageRow>(row: StoredMessageRow<T>): T {
  const body = typeof row.body === 'string' ? row.body : Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength).toString('utf8');
  return { ...row, body } as T;
}

export class MailTables {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  addAgent(name: string, role: string | null, nowMs: number): boolean {
    return this.#db.run('INSERT OR IGNORE INTO agents (name, role, created_at) VALUES (?, ?, ?)', name, role, nowMs).changes > 0;
  }

  setAgentRole(name: string, role: string | null): void {
    this.#db.run('UPDATE agents SET role = ? WHERE name = ?', role, name);
  }

  agent(name: string): AgentRow | undefined {
    return this.#db.get<AgentRow>('SELECT * FROM agents WHERE name = ?', name);
  }

  agents(): AgentRow[] {
    return this.#db.all<AgentRow>('SELECT * FROM agents ORDER BY name');
  }

  agentsWithRole(role: string): AgentRow[] {
    return this.#db.all<AgentRow>('SELECT * FROM agents WHERE role = ? ORDER BY name', role);
  }

  insertMessage(m: MessageRow): void {
    this.#db.run(
      `INSERT INTO messages (id, direction, from_addr, sender_host, to_json, thread, reply_to, kind, subject, body, ts, wire, meta_json, created_at, needs_reply, refs_json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      m.id,
      m.direction,
      m.from_addr,
      m.sender_host,
      m.to_json,
      m.thread,
      m.reply_to,
      m.kind,
      m.subject,
      Buffer.from(m.body, 'utf8'),
      m.ts,
      m.wire,
      m.meta_json,
      m.created_at,
      m.needs_reply,
      m.refs_json,
    );
  }

  message(id: string): MessageRow | undefined {
    const row = this.#db.get<StoredMessageRow<MessageRow>>('SELECT * FROM messages WHERE id = ?', id);
    return row === undefined ? undefined : withBodyText(row);
  }

  /** A new delivery in state 'delivered': its first state change, so receipt_seq 1. */
  insertDelivery(msgId: string, agent: string, nowMs: number): void {
    this.#db.run("INSERT INTO deliveries (msg_id, agent, state, receipt_seq, updated_at) VALUES (?, ?, 'delivered', 1, ?)", msgId, agent, nowMs);
  }

  delivery(msgId: string, agent: string): DeliveryRow | undefined {
    return this.#db.get<DeliveryRow>('SELECT * FROM deliveries WHERE msg_id = ? AND agent = ?', msgId, agent);
  }

  deliveriesOf(msgId: string): DeliveryRow[] {
    return this.#db.all<DeliveryRow>('SELECT * FROM deliveries WHERE msg_id = ? ORDER BY agent', msgId);
  }

  /** Moves a delivery forward and counts one more state change (the receipt seq); the caller checks the rank. */
  advanceDelivery(msgId: string, agent: string, state: DeliveryState, note: string | null, nowMs: number): number {
    this.#db.run(
      'UPDATE deliveries SET state = ?, note = COALESCE(?, note), receipt_seq = receipt_seq + 1, updated_at = ? WHERE msg_id = ? AND agent = ?',
      state,
      note,
      nowMs,
      msgId,
      agent,
    );
    return this.delivery(msgId, agent)?.receipt_seq ?? 0;
  }

  /** Deliveries of `agent` not yet acked, oldest first, at most `limit`. */
  /**
   * Up to `limit` of the agent's deliveries, by message id (time order): the oldest after `after`
   * (ascending), or the newest before `before` (descending; '' for no bound).
   */
  inbox(agent: string, limit: number, includeAcked: boolean, cursor: { after: string } | { before: string } = { after: '' }): InboxRow[] {
    const ascending = 'after' in cursor;
    return this.#db
      .all<StoredMessageRow<InboxRow>>(
        `SELECT m.*, d.state AS state, d.note AS note, d.agent AS agent FROM deliveries d JOIN messages m ON m.id = d.msg_id
       WHERE d.agent = ? AND (? OR d.state != 'acked') AND ${ascending ? 'm.id > ?' : "(? = '' OR m.id < ?)"}
       ORDER BY m.id ${ascending ? 'ASC' : 'DESC'} LIMIT ?`,
        agent,
        includeAcked ? 1 : 0,
        ...(ascending ? [cursor.after] : [cursor.before, cursor.before]),
        limit,
      )
      .map(withBodyText);
  }

  inboxCount(agent: string, includeAcked: boolean): number {
    return this.#db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM deliveries WHERE agent = ? AND (? OR state != 'acked')`, agent, includeAcked ? 1 : 0)?.n ?? 0;
  }
}
