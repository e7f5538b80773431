// Items, their dedup rows and per-target sequences (design §2, §4, §5, §6). Every insert, delete
// and move of items charges or releases the usage counters in the same statement group.
import type { SQLTagStore } from 'node:sqlite';
import type { DedupRow, DedupSweepLimits, DedupSweepStep, ItemHeader, ItemKind, NewItem, PulledItem, PullPage } from '../relay-store.ts';
import { assertInteger, blob, int, text, type Row } from './columns.ts';
import { chargeUsage, usageGroups } from './usage.ts';

const ALL_SEQS = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER };

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

function kindFrom(row: Row): ItemKind {
  const kind = text(row, 'kind');
  if (kind !== 'envelope' && kind !== 'receipt' && kind !== 'expired') throw new Error(`relay store damaged: item kind ${kind}`);
  return kind;
}

function headerFrom(row: Row): ItemHeader {
  return {
    targetPubkey: text(row, 'target_pubkey'),
    seq: int(row, 'seq'),
    kind: kindFrom(row),
    itemId: text(row, 'item_id'),
    senderPubkey: text(row, 'sender_pubkey'),
    wireHash: text(row, 'wire_hash'),
    bytes: int(row, 'bytes'),
    acceptedAt: int(row, 'accepted_at'),
    expiresAt: int(row, 'expires_at'),
  };
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
  let count = 0;
  let total = 0;
  for (const row of sizes.slice(0, limit)) {
    const bytes = int(row, 'bytes');
    if (count > 0 && total + bytes > maxBytes) break;
    count += 1;
    total += bytes;
  }
  if (count === 0) return { items: [], more: false };
  const lastSeq = int(sizes[count - 1] as Row, 'seq');
  const items: PulledItem[] = sql.all`SELECT seq, kind, item_id, sender_pubkey, wire FROM items
                                      WHERE target_pubkey = ${target} AND seq > ${after} AND seq <= ${lastSeq} ORDER BY seq`
    .map((row) => ({ seq: int(row, 'seq'), kind: kindFrom(row), itemId: text(row, 'item_id'), senderPubkey: text(row, 'sender_pubkey'), wire: blob(row, 'wire') }));
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
  const deleted = removeItems(sql, target, ALL_SEQS.min, through);
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

/** Deletes one item; its dedup row stays as the tombstone until sweepDedup. */
export function deleteItem(sql: SQLTagStore, target: string, seq: number): void {
  assertInteger(seq, 'seq');
  removeItems(sql, target, seq, seq);
}

/**
 * Deletes up to `limit` tombstones accepted before `beforeMs`, oldest first. Dedup rows are appended
 * as items are accepted (schema 5), so rowid order is acceptance order: the walk stops at the first
 * row accepted at or after `beforeMs` (a row behind it that is older, after the clock stepped back,
 * waits for a later sweep) and passes over rows whose item still exists. A row stamped after `nowMs`
 * (the clock ran ahead, then was set right) is passed over too: stopping there would keep every
 * later tombstone for as long as the clock was ahead.
 */
export function sweepDedup(sql: SQLTagStore, beforeMs: number, nowMs: number, step: DedupSweepLimits): DedupSweepStep {
  assertInteger(beforeMs, 'beforeMs');
  assertInteger(nowMs, 'nowMs');
  assertInteger(step.after, 'after');
  assertInteger(step.limit, 'limit');
  assertInteger(step.maxWalk, 'maxWalk');
  // a step that may walk or delete nothing could never move the sweep on
  if (step.limit < 1 || step.maxWalk < 1) throw new RangeError('a dedup sweep step needs limit and maxWalk of at least 1');
  let walked = 0;
  let lastWalked = step.after;
  let lastFound: number | null = null;
  let found = 0;
  let hitLimit = false;
  const rows = sql.iterate`SELECT d.rowid AS id, d.accepted_at,
                                  EXISTS (SELECT 1 FROM items AS i WHERE i.target_pubkey = d.target_pubkey AND i.seq = d.seq) AS live
                           FROM dedup AS d WHERE d.rowid > ${step.after} ORDER BY d.rowid LIMIT ${step.maxWalk}`;
  for (const row of rows) {
    hitLimit = found === step.limit;
    if (hitLimit) break;
    const acceptedAt = int(row, 'accepted_at');
    if (acceptedAt >= beforeMs && acceptedAt <= nowMs) break;
    walked += 1;
    lastWalked = int(row, 'id');
    if (acceptedAt >= beforeMs || int(row, 'live') === 1) continue;
    lastFound = lastWalked;
    found += 1;
  }
  // every row in (after, lastFound] was walked above: this deletes exactly the ones found
  const deleted = lastFound === null ? 0 : Number(sql.run`DELETE FROM dedup AS d
      WHERE d.rowid > ${step.after} AND d.rowid <= ${lastFound} AND d.accepted_at < ${beforeMs}
        AND NOT EXISTS (SELECT 1 FROM items AS i WHERE i.target_pubkey = d.target_pubkey AND i.seq = d.seq)`.changes);
  // stopped by its limit, or walked its whole allowance: more rows may follow
  return { deleted, resumeAfter: hitLimit || walked === step.maxWalk ? lastWalked : null };
}

/**
 * Rotation: appends the old key's queue to the new key's in order, with fresh seqs from
 * max(next_seq, nowMs); each dedup row follows its item, tombstones move as they are (a collision
 * with a row the new key already has keeps the new key's row); usage moves with the items.
 * Returns how many items moved.
 */
export function moveQueue(sql: SQLTagStore, oldKey: string, newKey: string, nowMs: number): number {
  const groups = usageGroups(sql, oldKey, ALL_SEQS.min, ALL_SEQS.max);
  const oldItems = sql.all`SELECT seq, item_id, sender_pubkey FROM items WHERE target_pubkey = ${oldKey} ORDER BY seq`;
  if (oldItems.length > 0) {
    const first = allocateSeqs(sql, newKey, oldItems.length, nowMs);
    oldItems.forEach((row, index) => {
      const newSeq = first + index;
      const itemId = text(row, 'item_id');
      const sender = text(row, 'sender_pubkey');
      sql.run`UPDATE items SET target_pubkey = ${newKey}, seq = ${newSeq} WHERE target_pubkey = ${oldKey} AND seq = ${int(row, 'seq')}`;
      sql.run`UPDATE OR IGNORE dedup SET target_pubkey = ${newKey}, seq = ${newSeq}
              WHERE target_pubkey = ${oldKey} AND item_id = ${itemId} AND sender_pubkey = ${sender}`;
    });
  }
  sql.run`UPDATE OR IGNORE dedup SET target_pubkey = ${newKey} WHERE target_pubkey = ${oldKey}`;
  sql.run`DELETE FROM dedup WHERE target_pubkey = ${oldKey}`;
  for (const group of groups) {
    chargeUsage(sql, group, -1);
    chargeUsage(sql, { ...group, targetPubkey: newKey }, 1);
  }
  return oldItems.length;
}
