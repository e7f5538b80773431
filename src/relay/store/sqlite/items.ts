// Items, their dedup rows and per-target sequences (design §2, §4, §5, §6): the primitives of the
// items domain. Every insert, delete and move of items charges or releases the usage counters in
// the same statement group; the sweep and rotation rules over these live in ../rules/.
import type { SQLTagStore } from 'node:sqlite';
import type {
  DedupKey,
  DedupRow,
  DedupWalkRow,
  ItemHeader,
  ItemReader,
  ItemTransactor,
  NewItem,
  PullPage,
  QueueRef,
  QueueTotals,
  SeqMove,
} from '../relay-store.ts';
import { assertInteger, int, text, textOrNull, type Row } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';
import { chargeUsage, usageGroups } from './usage.ts';
import { headerFrom, pageLength, pulledFrom } from '../sql/row-records.ts';

/**
 * Allocates `count` consecutive seqs for a target, starting at max(next_seq, nowMs): a store restored
 * from an older copy still allocates above anything it handed out before (design §2; the restore
 * of §5 relies on it). Returns the first.
 */
export function allocateSeqs(sql: SQLTagStore, target: string, count: number, nowMs: number): number {
  assertInteger(nowMs, 'nowMs');
  assertInteger(count, 'count');
  const row = sql.get`INSERT INTO seqs (target_pubkey, next_seq) VALUES (${target}, ${Math.max(1, nowMs) + count})
                      ON CONFLICT (target_pubkey) DO UPDATE SET next_seq = max(next_seq, ${nowMs}) + ${count}
                      RETURNING next_seq`;
  return int(row as Row, 'next_seq') - count;
}

export function headSeq(sql: SQLTagStore, target: string): number {
  const row = sql.get`SELECT next_seq FROM seqs WHERE target_pubkey = ${target}`;
  return row === undefined ? 0 : int(row, 'next_seq') - 1;
}

export function getDedup(sql: SQLTagStore, sender: string, itemId: string, target: string): DedupRow | null {
  const row = sql.get`SELECT * FROM dedup WHERE target_pubkey = ${target} AND item_id = ${itemId} AND sender_pubkey = ${sender}`;
  if (row === undefined) return null;
  return {
    senderPubkey: text(row, 'sender_pubkey'),
    itemId: text(row, 'item_id'),
    targetPubkey: text(row, 'target_pubkey'),
    wireHash: text(row, 'wire_hash'),
    seq: int(row, 'seq'),
    acceptedAt: int(row, 'accepted_at'),
  };
}

export function insertItem(sql: SQLTagStore, item: NewItem, nowMs: number): number {
  assertInteger(item.acceptedAt, 'acceptedAt');
  assertInteger(item.expiresAt, 'expiresAt');
  const seq = allocateSeqs(sql, item.targetPubkey, 1, nowMs);
  const bytes = item.wire.byteLength;
  sql.run`INSERT INTO items (target_pubkey, seq, kind, item_id, sender_pubkey, wire, wire_hash, bytes, accepted_at, expires_at, account)
          VALUES (${item.targetPubkey}, ${seq}, ${item.kind}, ${item.itemId}, ${item.senderPubkey}, ${item.wire},
                  ${item.wireHash}, ${bytes}, ${item.acceptedAt}, ${item.expiresAt}, ${item.account})`;
  // a plain INSERT: the core looked the dedup row up first, so an existing one is a bug to surface
  sql.run`INSERT INTO dedup (sender_pubkey, item_id, target_pubkey, wire_hash, seq, accepted_at)
          VALUES (${item.senderPubkey}, ${item.itemId}, ${item.targetPubkey}, ${item.wireHash}, ${seq}, ${item.acceptedAt})`;
  chargeUsage(sql, { targetPubkey: item.targetPubkey, senderPubkey: item.senderPubkey, account: item.account, items: 1, bytes }, 1);
  return seq;
}

/**
 * A page in seq order: at most `limit` items, stopping before the item that would pass `maxBytes`,
 * but at least one when any remain. Sizes are read first so an oversized page is never loaded;
 * two `all()` reads cost less than one pass with `iterate()`, which crosses into SQLite per row.
 */
export function pull(sql: SQLTagStore, target: string, after: number, limit: number, maxBytes: number): PullPage {
  assertInteger(after, 'after');
  assertInteger(limit, 'limit');
  assertInteger(maxBytes, 'maxBytes');
  if (limit < 1) return { items: [], more: hasItemsAfter(sql, target, after) };
  const sizes = sql.all`SELECT seq, bytes FROM items WHERE target_pubkey = ${target} AND seq > ${after}
                        ORDER BY seq LIMIT ${limit + 1}`;
  const count = pageLength(sizes, limit, maxBytes);
  if (count === 0) return { items: [], more: false };
  const lastSeq = int(sizes[count - 1] as Row, 'seq');
  const items = sql.all`SELECT seq, kind, item_id, sender_pubkey, wire FROM items
                        WHERE target_pubkey = ${target} AND seq > ${after} AND seq <= ${lastSeq} ORDER BY seq`.map(pulledFrom);
  return { items, more: sizes.length > count };
}

function hasItemsAfter(sql: SQLTagStore, target: string, after: number): boolean {
  return sql.get`SELECT 1 AS found FROM items WHERE target_pubkey = ${target} AND seq > ${after} LIMIT 1` !== undefined;
}

export function ackedThrough(sql: SQLTagStore, target: string): number {
  const row = sql.get`SELECT acked_through FROM acked WHERE target_pubkey = ${target}`;
  return row === undefined ? 0 : int(row, 'acked_through');
}

/** Deletes a target's items in [minSeq, maxSeq] and releases their usage; returns how many. */
function removeItems(sql: SQLTagStore, target: string, minSeq: number, maxSeq: number): number {
  const groups = usageGroups(sql, target, minSeq, maxSeq);
  for (const group of groups) chargeUsage(sql, group, -1);
  const { changes } = sql.run`DELETE FROM items WHERE target_pubkey = ${target} AND seq BETWEEN ${minSeq} AND ${maxSeq}`;
  return Number(changes);
}

export function ack(sql: SQLTagStore, target: string, through: number): number {
  assertInteger(through, 'through');
  const deleted = removeItems(sql, target, Number.MIN_SAFE_INTEGER, through);
  sql.run`INSERT INTO acked (target_pubkey, acked_through) VALUES (${target}, ${through})
          ON CONFLICT (target_pubkey) DO UPDATE SET acked_through = max(acked_through, excluded.acked_through)`;
  return deleted;
}

export function expiredItems(sql: SQLTagStore, nowMs: number, limit: number): ItemHeader[] {
  assertInteger(nowMs, 'nowMs');
  assertInteger(limit, 'limit');
  return sql.all`SELECT target_pubkey, seq, kind, item_id, sender_pubkey, wire_hash, bytes, accepted_at, expires_at
                 FROM items WHERE expires_at <= ${nowMs} ORDER BY expires_at, target_pubkey, seq LIMIT ${limit}`.map(headerFrom);
}

/** Deletes one item; its dedup row stays as the tombstone until the dedup sweep. */
export function deleteItem(sql: SQLTagStore, target: string, seq: number): void {
  assertInteger(seq, 'seq');
  removeItems(sql, target, seq, seq);
}

/** Dedup rows after `after` in rowid order, which is acceptance order (rows are appended as items are accepted, schema 5). */
export function dedupWalk(sql: SQLTagStore, after: number, limit: number): DedupWalkRow[] {
  assertInteger(after, 'after');
  assertInteger(limit, 'limit');
  return sql.all`SELECT d.rowid AS id, d.accepted_at,
                        EXISTS (SELECT 1 FROM items AS i WHERE i.target_pubkey = d.target_pubkey AND i.seq = d.seq) AS live
                 FROM dedup AS d WHERE d.rowid > ${after} ORDER BY d.rowid LIMIT ${limit}`.map((row) => ({
    id: int(row, 'id'),
    acceptedAt: int(row, 'accepted_at'),
    live: int(row, 'live') === 1,
  }));
}

export function deleteDedupRows(sql: SQLTagStore, ids: readonly number[]): number {
  for (const id of ids) assertInteger(id, 'dedup row id');
  if (ids.length === 0) return 0;
  return Number(
    sql.run`DELETE FROM dedup AS d WHERE d.rowid IN (SELECT value FROM json_each(${JSON.stringify(ids)}))
      AND NOT EXISTS (SELECT 1 FROM items AS i WHERE i.target_pubkey = d.target_pubkey AND i.seq = d.seq)`.changes,
  );
}

export function queueRefs(sql: SQLTagStore, target: string): QueueRef[] {
  return sql.all`SELECT seq, item_id, sender_pubkey FROM items WHERE target_pubkey = ${target} ORDER BY seq`.map((row) => ({
    seq: int(row, 'seq'),
    itemId: text(row, 'item_id'),
    senderPubkey: text(row, 'sender_pubkey'),
  }));
}

export function queueTotals(sql: SQLTagStore): QueueTotals {
  const total = sql.get`SELECT COALESCE(SUM(items), 0) AS items FROM queue_usage`;
  const oldest = sql.get`SELECT accepted_at FROM items ORDER BY expires_at LIMIT 1`;
  return { items: total === undefined ? 0 : int(total, 'items'), oldestAcceptedAt: oldest === undefined ? null : int(oldest, 'accepted_at') };
}

/** Moves items to seqs allocated for them; their usage moves with them (one charge per sender and account), their dedup rows do not. */
export function moveItems(sql: SQLTagStore, fromTarget: string, toTarget: string, moves: readonly SeqMove[]): void {
  for (const move of moves) {
    assertInteger(move.from, 'seq');
    assertInteger(move.to, 'seq');
  }
  const fromSeqs = JSON.stringify(moves.map((move) => move.from));
  const groups = sql.all`SELECT sender_pubkey, account, count(*) AS items, sum(bytes) AS bytes FROM items
                         WHERE target_pubkey = ${fromTarget} AND seq IN (SELECT value FROM json_each(${fromSeqs}))
                         GROUP BY sender_pubkey, account`.map((row) => ({
    targetPubkey: fromTarget,
    senderPubkey: text(row, 'sender_pubkey'),
    account: textOrNull(row, 'account'),
    items: int(row, 'items'),
    bytes: int(row, 'bytes'),
  }));
  for (const move of moves) {
    const { changes } = sql.run`UPDATE items SET target_pubkey = ${toTarget}, seq = ${move.to} WHERE target_pubkey = ${fromTarget} AND seq = ${move.from}`;
    if (Number(changes) !== 1) throw new RangeError(`no item at seq ${move.from} to move`);
  }
  for (const group of groups) {
    chargeUsage(sql, group, -1);
    chargeUsage(sql, { ...group, targetPubkey: toTarget }, 1);
  }
}

/** OR IGNORE: a row the destination already has for the same (sender, item id) wins; the source row stays. */
export function repointDedup(sql: SQLTagStore, fromTarget: string, toTarget: string, items?: ReadonlyArray<DedupKey & { seq: number }>): number {
  if (items === undefined) return Number(sql.run`UPDATE OR IGNORE dedup SET target_pubkey = ${toTarget} WHERE target_pubkey = ${fromTarget}`.changes);
  let moved = 0;
  for (const item of items) {
    assertInteger(item.seq, 'seq');
    moved += Number(
      sql.run`UPDATE OR IGNORE dedup SET target_pubkey = ${toTarget}, seq = ${item.seq}
                            WHERE target_pubkey = ${fromTarget} AND item_id = ${item.itemId} AND sender_pubkey = ${item.senderPubkey}`.changes,
    );
  }
  return moved;
}

export function deleteTombstonesOf(sql: SQLTagStore, target: string): number {
  return Number(
    sql.run`DELETE FROM dedup AS d WHERE d.target_pubkey = ${target}
      AND NOT EXISTS (SELECT 1 FROM items AS i WHERE i.target_pubkey = d.target_pubkey AND i.seq = d.seq)`.changes,
  );
}

export function itemReader(use: UseSql): ItemReader {
  return {
    async dedup(senderPubkey, itemId, targetPubkey) {
      return getDedup(use(), senderPubkey, itemId, targetPubkey);
    },
    async pull(targetPubkey, after, limit, maxBytes) {
      return pull(use(), targetPubkey, after, limit, maxBytes);
    },
    async headSeq(targetPubkey) {
      return headSeq(use(), targetPubkey);
    },
    async ackedThrough(targetPubkey) {
      return ackedThrough(use(), targetPubkey);
    },
    async expired(nowMs, limit) {
      return expiredItems(use(), nowMs, limit);
    },
    async dedupWalk(after, limit) {
      return dedupWalk(use(), after, limit);
    },
    async queueRefs(targetPubkey) {
      return queueRefs(use(), targetPubkey);
    },
    async queueTotals() {
      return queueTotals(use());
    },
  };
}

export function itemTransactor(use: UseSql): ItemTransactor {
  return {
    ...itemReader(use),
    async insert(item, nowMs) {
      return insertItem(use(), item, nowMs);
    },
    async ack(targetPubkey, through) {
      return ack(use(), targetPubkey, through);
    },
    async delete(targetPubkey, seq) {
      deleteItem(use(), targetPubkey, seq);
    },
    async deleteDedupRows(ids) {
      return deleteDedupRows(use(), ids);
    },
    async allocateSeqs(targetPubkey, count, nowMs) {
      return allocateSeqs(use(), targetPubkey, count, nowMs);
    },
    async moveItems(fromTarget, toTarget, moves) {
      moveItems(use(), fromTarget, toTarget, moves);
    },
    async repointDedup(fromTarget, toTarget, items) {
      return repointDedup(use(), fromTarget, toTarget, items);
    },
    async deleteTombstonesOf(targetPubkey) {
      return deleteTombstonesOf(use(), targetPubkey);
    },
  };
}
