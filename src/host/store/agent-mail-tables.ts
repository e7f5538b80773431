// An agent's view of the stored mail: what it sent or received, threads, full-text search, new
// deliveries since a mark, send idempotency keys and the directory of agents seen.
import type { Database } from './database.ts';
import { withBodyText, type DeliveryState, type MessageRow, type StoredMessageRow } from './mail-tables.ts';

/** A message as one agent sees it: its delivery state when the agent received it, else null (sent by it). */
export type AgentMessageRow = MessageRow & { state: DeliveryState | null; note: string | null };

export interface NewDeliveryRow {
  mark: number;
  msg_id: string;
}

export interface SenderSeenRow {
  address: string;
  host: string;
  last_seen: string;
}

// Mail the agent `?1` (its name) received or, as `?2` (its address), sent.
const VISIBLE = `(m.from_addr = ?2 OR EXISTS (SELECT 1 FROM deliveries v WHERE v.msg_id = m.id AND v.agent = ?1))`;
const WITH_STATE = `m.*, (SELECT d.state FROM deliveries d WHERE d.msg_id = m.id AND d.agent = ?1) AS state,
  (SELECT d.note FROM deliveries d WHERE d.msg_id = m.id AND d.agent = ?1) AS note`;

export class AgentMailTables {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** A number that grows with every new delivery to `agent` (0 when it has none). */
  deliveryMark(agent: string): number {
    return this.#db.get<{ mark: number | null }>('SELECT MAX(rowid) AS mark FROM deliveries WHERE agent = ?', agent)?.mark ?? 0;
  }

  /** Deliveries to `agent` newer than `mark`, oldest first, at most `limit`. */
  deliveriesAfter(agent: string, mark: number, limit: number): NewDeliveryRow[] {
    return this.#db.all<NewDeliveryRow>(
      'SELECT rowid AS mark, msg_id FROM deliveries WHERE agent = ? AND rowid > ? ORDER BY rowid LIMIT ?',
      agent,
      mark,
      limit,
    );
  }

  /** How many deliveries to `agent` it has not read yet. */
  unreadCount(agent: string): number {
    return this.#db.get<{ n: number }>("SELECT COUNT(*) AS n FROM deliveries WHERE agent = ? AND state IN ('delivered', 'notified')", agent)?.n ?? 0;
  }

  /** Changes SQLite reports when another connection committed to the file since the last look. */
  dataVersion(): number {
    return this.#db.get<{ data_version: number }>('PRAGMA data_version')?.data_version ?? 0;
  }

  visibleMessage(agent: string, address: string, id: string): AgentMessageRow | undefined {
    const row = this.#db.get<StoredMessageRow<AgentMessageRow>>(`SELECT ${WITH_STATE} FROM messages m WHERE m.id = ?3 AND ${VISIBLE}`, agent, address, id);
    return row === undefined ? undefined : withBodyText(row);
  }

  /** The thread's messages the agent sent or received, oldest first. */
  thread(agent: string, address: string, thread: string, limit: number): AgentMessageRow[] {
    return this.#db
      .all<StoredMessageRow<AgentMessageRow>>(
        `SELECT ${WITH_STATE} FROM messages m WHERE m.thread = ?3 AND ${VISIBLE} ORDER BY m.id LIMIT ?4`,
        agent,
        address,
        thread,
        limit,
      )
      .map(withBodyText);
  }

  /** Best matches first for an FTS5 query over subject and body, among the agent's mail. */
  search(agent: string, address: string, ftsQuery: string, limit: number): AgentMessageRow[] {
    return this.#db
      .all<StoredMessageRow<AgentMessageRow>>(
        `SELECT ${WITH_STATE} FROM messages_fts f JOIN messages m ON m.rowid = f.rowid
       WHERE messages_fts MATCH ?3 AND ${VISIBLE} ORDER BY f.rank LIMIT ?4`,
        agent,
        address,
        ftsQuery,
        limit,
      )
      .map(withBodyText);
  }

  /** When the agent last sent mail (an ISO time), or null. */
  lastSent(address: string): string | null {
    return this.#db.get<{ ts: string | null }>('SELECT MAX(ts) AS ts FROM messages WHERE from_addr = ?', address)?.ts ?? null;
  }

  /** Senders of received mail (agents of paired hosts), the most recently seen first. */
  sendersSeen(limit: number): SenderSeenRow[] {
    return this.#db.all<SenderSeenRow>(
      `SELECT from_addr AS address, sender_host AS host, MAX(ts) AS last_seen FROM messages WHERE direction = 'in'
       GROUP BY from_addr ORDER BY last_seen DESC LIMIT ?`,
      limit,
    );
  }

  setDescription(agent: string, description: string | null): void {
    this.#db.run('UPDATE agents SET description = ? WHERE name = ?', description, agent);
  }

  description(agent: string): string | null {
    return this.#db.get<{ description: string | null }>('SELECT description FROM agents WHERE name = ?', agent)?.description ?? null;
  }

  sentWithKey(agent: string, key: string): string | undefined {
    return this.#db.get<{ msg_id: string }>('SELECT msg_id FROM send_keys WHERE agent = ? AND key = ?', agent, key)?.msg_id;
  }

  rememberKey(agent: string, key: string, msgId: string, nowMs: number): void {
    this.#db.run('INSERT INTO send_keys (agent, key, msg_id, created_at) VALUES (?, ?, ?, ?)', agent, key, msgId, nowMs);
  }

  /**
   * Up to `limit` message ids starting with `prefix` (ids are upper case), in id order: among the
   * agent's mail when `agent` is given, else among all mail on this host. A range on the primary key.
   */
  idsWithPrefix(prefix: string, limit: number, agent: { name: string; address: string } | null): string[] {
    // '~' sorts after every character of an id, so [prefix, prefix~) holds exactly the ids it starts
    const range = 'm.id >= ?3 AND m.id < ?4';
    const sql =
      agent === null
        ? `SELECT m.id FROM messages m WHERE ${range} ORDER BY m.id LIMIT ?5`
        : `SELECT m.id FROM messages m WHERE ${range} AND ${VISIBLE} ORDER BY m.id LIMIT ?5`;
    return this.#db.all<{ id: string }>(sql, agent?.name ?? null, agent?.address ?? null, prefix, `${prefix}~`, limit).map((r) => r.id);
  }
}
