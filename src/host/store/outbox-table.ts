// The outbox: one row per item and destination host. Rows are never deleted: a row leaves the
// active set ('queued') only by a move of the state machine (outbox-states.ts), whose table gives
// every UPDATE of a state its guard, and stays as the record of the send.
import { OUTBOX_KINDS, type OutboxKind } from './outbox-kinds.ts';
import { OUTBOX_MOVES, nextState, type OutboxMove, type OutboxMoveName, type OutboxState } from './outbox-states.ts';
import type { Database } from './database.ts';

/** The moves `end` makes: the row's new state is all that changes besides its transport and error. */
export type EndMove = Extract<OutboxMoveName, 'handOver' | 'reject' | 'giveUp' | 'bounce' | 'unconfirm' | 'expire'>;

/** The WHERE condition of rows `move` may take, and its parameters. */
function guard(move: OutboxMoveName): { sql: string; params: string[] } {
  const rule: OutboxMove = OUTBOX_MOVES[move];
  const marks = (n: number): string => Array.from({ length: n }, () => '?').join(', ');
  let sql = `state IN (${marks(rule.from.length)})`;
  const params: string[] = [...rule.from];
  if (rule.kinds !== undefined) {
    sql += ` AND kind IN (${marks(rule.kinds.length)})`;
    params.push(...rule.kinds);
  }
  if (rule.relayAcceptedOnly === true) sql += ' AND relay_accepted_at IS NOT NULL';
  return { sql, params };
}

/** What the relay's accept told us about a row. */
export interface RelayAcceptance {
  seq: number;
  epoch: string;
  /** canonical {accept, sig} as received */
  accept: string;
  acceptedAtMs: number;
}

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
  relay_seq: number | null;
  relay_epoch: string | null;
  relay_accept: string | null;
  relay_accepted_at: number | null;
  /** the relay refused this row for good (its reason): the LAN may still carry it, the relay never */
  relay_refused: string | null;
}

export interface NewOutboxRow {
  kind: OutboxKind;
  item_id: string;
  msg_id: string | null;
  peer_host: string;
  wire: string;
  /** set when the relay could never take the row (it is too large): the LAN only */
  relay_refused?: string | null;
}

export class OutboxTable {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Queues a row, due now; the same (kind, item, host) queued twice stays one row. */
  enqueue(row: NewOutboxRow, nowMs: number): void {
    this.#db.run(
      `INSERT OR IGNORE INTO outbox (kind, item_id, msg_id, peer_host, wire, state, next_at, created_at, relay_refused)
       VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)`,
      row.kind,
      row.item_id,
      row.msg_id,
      row.peer_host,
      row.wire,
      nowMs,
      nowMs,
      row.relay_refused ?? null,
    );
  }

  /** Queued rows whose time has come, oldest first. */
  due(nowMs: number, limit: number): OutboxRow[] {
    return this.#db.all<OutboxRow>("SELECT * FROM outbox WHERE state = 'queued' AND next_at <= ? ORDER BY id LIMIT ?", nowMs, limit);
  }

  /** Queued rows created before `cutoffMs` (for the delivery deadline). */
  queuedBefore(kind: OutboxKind, cutoffMs: number, limit: number): OutboxRow[] {
    return this.#db.all<OutboxRow>(
      // A row a relay once accepted has the relay's deadline instead (relay-deadlines.ts).
      "SELECT * FROM outbox WHERE state = 'queued' AND kind = ? AND created_at < ? AND relay_accepted_at IS NULL ORDER BY id LIMIT ?",
      kind,
      cutoffMs,
      limit,
    );
  }

  get(id: number): OutboxRow | undefined {
    return this.#db.get<OutboxRow>('SELECT * FROM outbox WHERE id = ?', id);
  }

  forMessage(msgId: string): OutboxRow[] {
    return this.#db.all<OutboxRow>("SELECT * FROM outbox WHERE msg_id = ? AND kind = 'envelope' ORDER BY peer_host", msgId);
  }

  /**
   * Ends row `id` by `move` (outbox-states.ts), recording the transport and the error when given;
   * false when the row is not where that move starts (another path moved it first).
   */
  end(id: number, move: EndMove, nowMs: number, change: { transport?: string | null; error?: string | null } = {}): boolean {
    const where = guard(move);
    const sets = ['state = ?', 'settled_at = ?'];
    const values: Array<string | number | null> = [OUTBOX_MOVES[move].to, nowMs];
    if (change.transport !== undefined) {
      sets.push('transport = ?');
      values.push(change.transport);
    }
    if (change.error !== undefined) {
      sets.push('last_error = ?');
      values.push(change.error);
    }
    return this.#db.run(`UPDATE outbox SET ${sets.join(', ')} WHERE id = ? AND ${where.sql}`, ...values, id, ...where.params).changes > 0;
  }

  /** Records a failed attempt and when to try again. */
  retryLater(id: number, error: string, nextAtMs: number): void {
    this.#db.run("UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_at = ? WHERE id = ? AND state = 'queued'", error, nextAtMs, id);
  }

  /** The relay refused a queued row for good: it is due again now, for the LAN only. */
  refuseOnRelay(id: number, reason: string, nowMs: number): void {
    this.#db.run(
      "UPDATE outbox SET relay_refused = ?, last_error = ?, next_at = ? WHERE id = ? AND state = 'queued'",
      reason,
      `relay refused it: ${reason}`,
      nowMs,
      id,
    );
  }

  /**
   * Envelope rows to `host` created since `sinceMs` for mail written by `fromAddr` (bounces by our
   * `mbx`). It walks the outbox: run only when a bounce is about to be queued, never per message.
   */
  countSentBy(fromAddr: string, host: string, sinceMs: number): number {
    return (
      this.#db.get<{ n: number }>(
        `SELECT COUNT(*) AS n FROM outbox o JOIN messages m ON m.id = o.msg_id
         WHERE o.kind = 'envelope' AND o.peer_host = ? AND o.created_at >= ? AND m.from_addr = ?`,
        host,
        sinceMs,
        fromAddr,
      )?.n ?? 0
    );
  }

  /** Another relay was pinned: rows the old one refused for good may go to the relay again. */
  clearRelayRefusals(): void {
    this.#db.run("UPDATE outbox SET relay_refused = NULL WHERE state = 'queued' AND relay_refused IS NOT NULL");
  }

  /**
   * Sends again the newest receipt per recipient of `msgId` that a transport already carried (a relay
   * that lost it in a restore) or that was given up: it is queued again, due now, with the same
   * bytes, and its 72 h deadline starts over. Returns how many.
   */
  requeueLatestReceipts(msgId: string, nowMs: number): number {
    const rows = this.#db.all<{ id: number; item_id: string; state: OutboxState; kind: OutboxKind; relay_accepted_at: number | null }>(
      "SELECT id, item_id, state, kind, relay_accepted_at FROM outbox WHERE kind = 'receipt' AND msg_id = ? ORDER BY id",
      msgId,
    );
    // item_id = receipt:<msg>:<recipient>:<seq>; later rows of one recipient are newer receipts
    const newest = new Map<string, (typeof rows)[number]>();
    for (const r of rows) newest.set(r.item_id.slice(0, r.item_id.lastIndexOf(':')), r);
    const where = guard('resend');
    let requeued = 0;
    for (const r of newest.values()) {
      if (nextState('resend', r) === null) continue;
      requeued += this.#db.run(
        `UPDATE outbox SET state = ?, next_at = ?, created_at = ?, settled_at = NULL, attempts = 0, last_error = NULL
           WHERE id = ? AND ${where.sql}`,
        OUTBOX_MOVES.resend.to,
        nowMs,
        nowMs,
        r.id,
        ...where.params,
      ).changes;
    }
    return requeued;
  }

  /** Makes one queued row due now (the owner asked to try it again at once); false when it is not queued. */
  makeRowDueNow(id: number, nowMs: number): boolean {
    return this.#db.run("UPDATE outbox SET next_at = MIN(next_at, ?) WHERE id = ? AND state = 'queued'", nowMs, id).changes > 0;
  }

  /**
   * Makes every waiting row for `host` due now: a path to it works again (a verified call, its LAN
   * answering, an item or enc-key ad of it seen at the relay), a reason to try at once, not after the backoff.
   */
  makeDueNow(host: string, nowMs: number): number {
    return this.#db.run("UPDATE outbox SET next_at = ? WHERE peer_host = ? AND state = 'queued' AND next_at > ?", nowMs, host, nowMs).changes;
  }

  /** Makes every waiting row due now, whatever its host (the relay, which carries to all of them, answers again). */
  makeAllDueNow(nowMs: number): number {
    return this.#db.run("UPDATE outbox SET next_at = ? WHERE state = 'queued' AND next_at > ?", nowMs, nowMs).changes;
  }

  /** Marks queued receipts of one delivery as replaced by a newer one. */
  supersedeReceipts(itemPrefix: string, host: string, nowMs: number): void {
    const where = guard('supersede');
    this.#db.run(
      `UPDATE outbox SET state = ?, settled_at = ? WHERE peer_host = ? AND substr(item_id, 1, length(?)) = ? AND ${where.sql}`,
      OUTBOX_MOVES.supersede.to,
      nowMs,
      host,
      itemPrefix,
      itemPrefix,
      ...where.params,
    );
  }

  /** Queued rows grouped by age, for doctor. */
  queuedAges(nowMs: number): Array<{ kind: string; peer_host: string; count: number; oldest: number }> {
    return this.#db
      .all("SELECT kind, peer_host, COUNT(*) AS count, MIN(created_at) AS oldest FROM outbox WHERE state = 'queued' GROUP BY kind, peer_host ORDER BY oldest")
      .map((r) => r as { kind: string; peer_host: string; count: number; oldest: number })
      .map((r) => ({ ...r, oldest: nowMs - r.oldest }));
  }

  /** A queued row the relay accepted: it waits in relay-accepted for the target's delivery receipt. */
  relayAccept(id: number, a: RelayAcceptance, nowMs: number): boolean {
    const where = guard('relayAccept');
    return (
      this.#db.run(
        `UPDATE outbox SET state = ?, transport = 'relay', last_error = NULL, settled_at = ?,
         relay_seq = ?, relay_epoch = ?, relay_accept = ?, relay_accepted_at = ? WHERE id = ? AND ${where.sql}`,
        OUTBOX_MOVES.relayAccept.to,
        nowMs,
        a.seq,
        a.epoch,
        a.accept,
        a.acceptedAtMs,
        id,
        ...where.params,
      ).changes > 0
    );
  }

  /**
   * The target's delivery receipt for `msgId` came: its envelope row for `host` that a relay accepted
   * is settled, whether it waits as relay-accepted or was queued again for a re-push.
   */
  settleByReceipt(msgId: string, host: string, nowMs: number): number {
    const where = guard('settle');
    return this.#db.run(
      `UPDATE outbox SET state = ?, settled_at = ? WHERE msg_id = ? AND peer_host = ? AND ${where.sql}`,
      OUTBOX_MOVES.settle.to,
      nowMs,
      msgId,
      host,
      ...where.params,
    ).changes;
  }

  /** Rows a relay accepted that still wait for their receipt (the ones `unconfirm` takes), accepted at or before `cutoffMs`. */
  relayAcceptedBy(cutoffMs: number, limit: number): OutboxRow[] {
    const where = guard('unconfirm');
    return this.#db.all<OutboxRow>(`SELECT * FROM outbox WHERE relay_accepted_at <= ? AND ${where.sql} ORDER BY id LIMIT ?`, cutoffMs, ...where.params, limit);
  }

  /** The envelope row of `itemId` for `host` that a relay accepted and that still waits for its receipt (the one `expire` takes). */
  relayAcceptedRow(itemId: string, host: string): OutboxRow | undefined {
    const where = guard('expire');
    return this.#db.get<OutboxRow>(
      `SELECT * FROM outbox WHERE kind = 'envelope' AND item_id = ? AND peer_host = ? AND ${where.sql}`,
      itemId,
      host,
      ...where.params,
    );
  }

  /**
   * The relay lost its store (new epoch or a rewind): relay-accepted rows go back to the queue, due
   * now, to be pushed again with the same bytes (relay_epoch stays set: they go to the relay only).
   */
  requeueRelayAccepted(nowMs: number): number {
    const where = guard('repush');
    return this.#db.run(`UPDATE outbox SET state = ?, next_at = ?, settled_at = NULL WHERE ${where.sql}`, OUTBOX_MOVES.repush.to, nowMs, ...where.params)
      .changes;
  }

  /** Rows per kind and state: a message's copies, receipts and rotations are counted apart. */
  countsByKindAndState(): Record<OutboxKind, Record<string, number>> {
    const out = Object.fromEntries(OUTBOX_KINDS.map((kind) => [kind, {}])) as Record<OutboxKind, Record<string, number>>;
    for (const r of this.#db.all<{ kind: OutboxKind; state: string; n: number }>('SELECT kind, state, COUNT(*) AS n FROM outbox GROUP BY kind, state')) {
      out[r.kind][r.state] = r.n;
    }
    return out;
  }

  /** Rows a relay accepted at least once (or carried, for receipts), per state. */
  relayCountsByState(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.#db.all<{ state: string; n: number }>(
      "SELECT state, COUNT(*) AS n FROM outbox WHERE relay_accepted_at IS NOT NULL OR transport = 'relay' GROUP BY state",
    ))
      out[r.state] = r.n;
    return out;
  }

  /** The longest-waiting row in `states` (oldest creation), for doctor. */
  oldestIn(states: readonly OutboxState[]): OutboxRow | undefined {
    return this.#db.get<OutboxRow>(`SELECT * FROM outbox WHERE state IN (${states.map(() => '?').join(', ')}) ORDER BY created_at, id LIMIT 1`, ...states);
  }

  countByState(state: OutboxState, kind: OutboxKind): number {
    return this.#db.get<{ n: number }>('SELECT COUNT(*) AS n FROM outbox WHERE state = ? AND kind = ?', state, kind)?.n ?? 0;
  }
}
