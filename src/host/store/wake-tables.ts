// Waking agents: per agent and wake path a cursor over its deliveries, the outcome per delivery, the
// loop guard's trips and counts, and Claude Code hook sessions. The rules live in src/host/wake/.
import type { Database } from './database.ts';
import type { MessageRow } from './mail-tables.ts';

/** The ways an agent is told of new mail. */
export const WAKE_PATHS = ['hook', 'channel', 'exec'] as const;
export type WakePath = (typeof WAKE_PATHS)[number];

/** A delivery to an agent, its place in the agent's deliveries (mark) and the message's row number. */
export type WakeDeliveryRow = MessageRow & { mark: number; msg_row: number; state: string };

export interface WakeOutcomeRow {
  msg_id: string;
  agent: string;
  path: WakePath;
  woke: number;
  detail: string | null;
  at: number;
}

/** How far one wake path told an agent, and the agent's unread deliveries past that point. */
export interface WakeCursorRow {
  path: WakePath;
  mark: number;
  updated_at: number;
  untold: number;
}

export interface GuardTripRow {
  id: number;
  thread: string;
  pair: string;
  count: number;
  msg_id: string;
  msg_row: number;
  tripped_at: number;
  lifted_at: number | null;
  lifted_by: string | null;
  lift_mark: number | null;
}

const DELIVERY_COLUMNS = 'm.*, m.rowid AS msg_row, d.rowid AS mark, d.state AS state';

export class WakeTables {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  cursor(agent: string, path: WakePath): number {
    return this.#db.get<{ mark: number }>('SELECT mark FROM wake_cursors WHERE agent = ? AND path = ?', agent, path)?.mark ?? 0;
  }

  /** Moves the cursor forward (never back). */
  advanceCursor(agent: string, path: WakePath, mark: number, nowMs: number): void {
    this.#db.run(
      `INSERT INTO wake_cursors (agent, path, mark, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (agent, path) DO UPDATE SET mark = MAX(mark, excluded.mark), updated_at = excluded.updated_at`,
      agent,
      path,
      mark,
      nowMs,
    );
  }

  /** Each wake path that has looked at `agent`'s mail: its cursor, when it last moved, and how many unread deliveries lie past it. */
  cursorsOf(agent: string): WakeCursorRow[] {
    return this.#db.all<WakeCursorRow>(
      `SELECT c.path, c.mark, c.updated_at,
         (SELECT COUNT(*) FROM deliveries d WHERE d.agent = c.agent AND d.state IN ('delivered', 'notified') AND d.rowid > c.mark) AS untold
       FROM wake_cursors c WHERE c.agent = ? ORDER BY c.path`,
      agent,
    );
  }

  /** Deliveries to `agent` after `mark`, oldest first, at most `limit`, with their messages. */
  deliveriesAfter(agent: string, mark: number, limit: number): WakeDeliveryRow[] {
    return this.#db.all<WakeDeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.msg_id
       WHERE d.agent = ? AND d.rowid > ? ORDER BY d.rowid LIMIT ?`,
      agent,
      mark,
      limit,
    );
  }

  /** The agent's unread deliveries, oldest first, at most `limit`. */
  unread(agent: string, limit: number): WakeDeliveryRow[] {
    return this.#db.all<WakeDeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.msg_id
       WHERE d.agent = ? AND d.state IN ('delivered', 'notified') ORDER BY d.rowid LIMIT ?`,
      agent,
      limit,
    );
  }

  /** The newest delivery mark of `agent` (0: none). */
  lastMark(agent: string): number {
    return this.#db.get<{ mark: number | null }>('SELECT MAX(rowid) AS mark FROM deliveries WHERE agent = ?', agent)?.mark ?? 0;
  }

  recordOutcome(o: WakeOutcomeRow): void {
    this.#db.run(
      `INSERT INTO wake_outcomes (msg_id, agent, path, woke, detail, at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (msg_id, agent, path) DO UPDATE SET woke = MAX(woke, excluded.woke),
         detail = CASE WHEN excluded.woke >= woke THEN excluded.detail ELSE detail END,
         at = CASE WHEN excluded.woke > woke THEN excluded.at ELSE at END`,
      o.msg_id,
      o.agent,
      o.path,
      o.woke,
      o.detail,
      o.at,
    );
  }

  outcomes(msgId: string, agent: string): WakeOutcomeRow[] {
    return this.#db.all<WakeOutcomeRow>('SELECT * FROM wake_outcomes WHERE msg_id = ? AND agent = ? ORDER BY at, path', msgId, agent);
  }

  // The loop guard

  /** The row number of the thread's last message from a person (any host's owner) up to `upTo`; 0: none. */
  lastOwnerRow(thread: string, upTo: number): number {
    return (
      this.#db.get<{ r: number | null }>("SELECT MAX(rowid) AS r FROM messages WHERE thread = ? AND rowid <= ? AND from_addr LIKE 'owner@%'", thread, upTo)
        ?.r ?? 0
    );
  }

  /** Messages of the thread from either of `senders`, with row numbers in (after, upTo] and created after `sinceMs`. */
  countFrom(thread: string, senders: readonly [string, string], after: number, upTo: number, sinceMs: number): number {
    return (
      this.#db.get<{ n: number }>(
        'SELECT COUNT(*) AS n FROM messages WHERE thread = ? AND rowid > ? AND rowid <= ? AND created_at > ? AND from_addr IN (?, ?)',
        thread,
        after,
        upTo,
        sinceMs,
        senders[0],
        senders[1],
      )?.n ?? 0
    );
  }

  /** The newest messages row number (where counting starts after a lift). */
  lastMessageRow(): number {
    return this.#db.get<{ r: number | null }>('SELECT MAX(rowid) AS r FROM messages')?.r ?? 0;
  }

  activeTrip(thread: string): GuardTripRow | undefined {
    return this.#db.get<GuardTripRow>('SELECT * FROM wake_guard_trips WHERE thread = ? AND lifted_at IS NULL', thread);
  }

  activeTrips(limit: number): GuardTripRow[] {
    return this.#db.all<GuardTripRow>('SELECT * FROM wake_guard_trips WHERE lifted_at IS NULL ORDER BY tripped_at LIMIT ?', limit);
  }

  /** Where counting restarts in the thread after its last lift (0: never lifted). */
  liftMark(thread: string): number {
    return this.#db.get<{ r: number | null }>('SELECT MAX(lift_mark) AS r FROM wake_guard_trips WHERE thread = ?', thread)?.r ?? 0;
  }

  /** Records a trip unless the thread has an active one; returns whether it did. */
  insertTrip(t: Pick<GuardTripRow, 'thread' | 'pair' | 'count' | 'msg_id' | 'msg_row' | 'tripped_at'>): boolean {
    return (
      this.#db.run(
        'INSERT OR IGNORE INTO wake_guard_trips (thread, pair, count, msg_id, msg_row, tripped_at) VALUES (?, ?, ?, ?, ?, ?)',
        t.thread,
        t.pair,
        t.count,
        t.msg_id,
        t.msg_row,
        t.tripped_at,
      ).changes > 0
    );
  }

  liftTrip(id: number, by: string, liftMark: number, nowMs: number): void {
    this.#db.run('UPDATE wake_guard_trips SET lifted_at = ?, lifted_by = ?, lift_mark = ? WHERE id = ? AND lifted_at IS NULL', nowMs, by, liftMark, id);
  }

  // Claude Code hook sessions

  stopBlocks(sessionId: string, agent: string): number {
    return this.#db.get<{ n: number }>('SELECT stop_blocks AS n FROM wake_hook_sessions WHERE session_id = ? AND agent = ?', sessionId, agent)?.n ?? 0;
  }

  countStopBlock(sessionId: string, agent: string, nowMs: number): void {
    this.#db.run(
      `INSERT INTO wake_hook_sessions (session_id, agent, stop_blocks, updated_at) VALUES (?, ?, 1, ?)
       ON CONFLICT (session_id, agent) DO UPDATE SET stop_blocks = stop_blocks + 1, updated_at = excluded.updated_at`,
      sessionId,
      agent,
      nowMs,
    );
  }

  pruneSessions(beforeMs: number): void {
    this.#db.run('DELETE FROM wake_hook_sessions WHERE updated_at < ?', beforeMs);
  }
}
