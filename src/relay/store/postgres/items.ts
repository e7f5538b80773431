// Items, their dedup rows and per-target sequences in PostgreSQL (design §2, §4, §6), with the usage
// counters charged in the same statements.
//
// Seq order is commit order, per target. A seq comes from `INSERT … ON CONFLICT DO UPDATE … RETURNING`
// on the target's row in `seqs`, which leaves that row locked until the transaction ends. A second
// writer for the same target waits on the lock, and gets its seq only once the first one committed
// (or rolled back): so seq n+1 can never be committed, and seen by a pull, while n is still in
// flight, and a receiver that acks through n+1 has really been shown n. Two processes or two pools
// are no different: the lock lives in the server.
import type { DedupRow, DedupWalkRow, ItemHeader, ItemReader, ItemTransactor, NewItem, PullPage, QueueRef } from '../relay-store.ts';
import { assertInteger, int, text, type Row } from '../sql/columns.ts';
import type { TargetLocks } from './locks.ts';
import { droppingReadsAhead, type ReadAhead } from './read-ahead.ts';
import type { Sql, UsePg } from './sql.ts';
import { readUsageAhead } from './usage.ts';
import { headerFrom, pageLength, pulledFrom } from '../sql/row-records.ts';

/**
 * Allocates `count` consecutive seqs for a target from max(next_seq, nowMs) (design §2: a store
 * restored from an older copy still allocates above what it handed out) and holds the target's seq
 * row lock until commit. Returns the first.
 */
async function allocateSeqs(sql: Sql, target: string, count: number, nowMs: number): Promise<number> {
  assertInteger(nowMs, 'nowMs');
  assertInteger(count, 'count');
  const row = await sql.row(
    `INSERT INTO seqs (target_pubkey, next_seq) VALUES ($1, greatest(1, $2::bigint) + $3::bigint)
      ON CONFLICT (target_pubkey) DO UPDATE SET next_seq = greatest(seqs.next_seq, $2::bigint) + $3::bigint
      RETURNING next_seq`,
    [target, nowMs, count],
  );
  return int(row as Row, 'next_seq') - count;
}

async function headSeq(sql: Sql, target: string): Promise<number> {
  const row = await sql.row('SELECT next_seq FROM seqs WHERE target_pubkey = $1', [target]);
  return row === undefined ? 0 : int(row, 'next_seq') - 1;
}

async function getDedup(sql: Sql, sender: string, itemId: string, target: string): Promise<DedupRow | null> {
  const row = await sql.row(
    `SELECT sender_pubkey, item_id, target_pubkey, wire_hash, seq, accepted_at FROM dedup
      WHERE target_pubkey = $1 AND item_id = $2 AND sender_pubkey = $3`,
    [target, itemId, sender],
  );
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

/**
 * One statement: the seq (locking the target's seq row), the item, its dedup row and the three usage
 * counters. A plain dedup INSERT: the core looked the row up first, so an existing one is a bug (or
 * a race the caller's target lock rules out) to surface.
 */
async function insertItem(sql: Sql, item: NewItem, nowMs: number): Promise<number> {
  assertInteger(item.acceptedAt, 'acceptedAt');
  assertInteger(item.expiresAt, 'expiresAt');
  assertInteger(nowMs, 'nowMs');
  const row = await sql.row(
    `WITH s AS (
        INSERT INTO seqs (target_pubkey, next_seq) VALUES ($1, greatest(1, $11::bigint) + 1)
        ON CONFLICT (target_pubkey) DO UPDATE SET next_seq = greatest(seqs.next_seq, $11::bigint) + 1
        RETURNING next_seq - 1 AS seq),
      i AS (INSERT INTO items (target_pubkey, seq, kind, item_id, sender_pubkey, wire, wire_hash, bytes, accepted_at, expires_at, account)
        SELECT $1, s.seq, $2, $3, $4, $5, $6, $7, $8, $9, $10 FROM s),
      d AS (INSERT INTO dedup (target_pubkey, item_id, sender_pubkey, wire_hash, seq, accepted_at)
        SELECT $1, $3, $4, $6, s.seq, $8 FROM s),
      q AS (INSERT INTO queue_usage (target_pubkey, items, bytes) VALUES ($1, 1, $7)
        ON CONFLICT (target_pubkey) DO UPDATE SET items = queue_usage.items + 1, bytes = queue_usage.bytes + excluded.bytes),
      u AS (INSERT INTO sender_usage (sender_pubkey, target_pubkey, items, bytes) VALUES ($4, $1, 1, $7)
        ON CONFLICT (sender_pubkey, target_pubkey) DO UPDATE SET items = sender_usage.items + 1, bytes = sender_usage.bytes + excluded.bytes),
      a AS (INSERT INTO account_usage (account, items, bytes) SELECT $10, 1, $7 WHERE $10::text IS NOT NULL
        ON CONFLICT (account) DO UPDATE SET items = account_usage.items + 1, bytes = account_usage.bytes + excluded.bytes)
      SELECT seq FROM s`,
    [
      item.targetPubkey,
      item.kind,
      item.itemId,
      item.senderPubkey,
      item.wire,
      item.wireHash,
      item.wire.byteLength,
      item.acceptedAt,
      item.expiresAt,
      item.account,
      nowMs,
    ],
  );
  return int(row as Row, 'seq');
}

/**
 * A page in seq order: at most `limit` items, stopping before the item that would pass `maxBytes`
 * but at least one when any remain. Sizes are read first so an oversized page is never loaded.
 */
async function pull(sql: Sql, target: string, after: number, limit: number, maxBytes: number): Promise<PullPage> {
  assertInteger(after, 'after');
  assertInteger(limit, 'limit');
  assertInteger(maxBytes, 'maxBytes');
  const sizes = await sql.rows(`SELECT seq, bytes FROM items WHERE target_pubkey = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
    target,
    after,
    Math.max(limit, 0) + 1,
  ]);
  if (limit < 1) return { items: [], more: sizes.length > 0 };
  const count = pageLength(sizes, limit, maxBytes);
  if (count === 0) return { items: [], more: false };
  const lastSeq = int(sizes[count - 1] as Row, 'seq');
  const items = (
    await sql.rows(
      `SELECT seq, kind, item_id, sender_pubkey, wire FROM items
      WHERE target_pubkey = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`,
      [target, after, lastSeq],
    )
  ).map(pulledFrom);
  return { items, more: sizes.length > count };
}

async function ackedThrough(sql: Sql, target: string): Promise<number> {
  const row = await sql.row('SELECT acked_through FROM acked WHERE target_pubkey = $1', [target]);
  return row === undefined ? 0 : int(row, 'acked_through');
}

/**
 * Deletes a target's items in [minSeq, maxSeq] and releases their usage, in one statement: the
 * deleted rows, grouped by who is charged for them, are taken off each counter, and counters left
 * at 0 items are deleted. Returns how many items went.
 */
async function removeItems(sql: Sql, target: string, minSeq: number, maxSeq: number): Promise<number> {
  const row = await sql.row(
    `WITH gone AS (
        DELETE FROM items WHERE target_pubkey = $1 AND seq BETWEEN $2 AND $3 RETURNING sender_pubkey, account, bytes),
      by_sender AS (SELECT sender_pubkey, count(*) AS items, sum(bytes) AS bytes FROM gone GROUP BY sender_pubkey),
      by_account AS (SELECT account, count(*) AS items, sum(bytes) AS bytes FROM gone WHERE account IS NOT NULL GROUP BY account),
      q AS (UPDATE queue_usage SET items = queue_usage.items - t.items, bytes = queue_usage.bytes - t.bytes
        FROM (SELECT count(*) AS items, coalesce(sum(bytes), 0) AS bytes FROM gone) t
        WHERE queue_usage.target_pubkey = $1 AND t.items > 0),
      u AS (UPDATE sender_usage SET items = sender_usage.items - b.items, bytes = sender_usage.bytes - b.bytes
        FROM by_sender b WHERE sender_usage.target_pubkey = $1 AND sender_usage.sender_pubkey = b.sender_pubkey),
      a AS (UPDATE account_usage SET items = account_usage.items - b.items, bytes = account_usage.bytes - b.bytes
        FROM by_account b WHERE account_usage.account = b.account)
      SELECT (SELECT count(*) FROM gone) AS n, (SELECT coalesce(array_agg(account), '{}') FROM by_account) AS accounts`,
    [target, minSeq, maxSeq],
  );
  const removed = int(row as Row, 'n');
  // a second statement: the parts of one statement never see each other's updates
  if (removed > 0) {
    await sql.run(
      `WITH q AS (DELETE FROM queue_usage WHERE target_pubkey = $1 AND items <= 0),
        u AS (DELETE FROM sender_usage WHERE target_pubkey = $1 AND items <= 0)
        DELETE FROM account_usage WHERE account = ANY($2::text[]) AND items <= 0`,
      [target, (row as Row)['accounts']],
    );
  }
  return removed;
}

async function ack(sql: Sql, target: string, through: number): Promise<number> {
  assertInteger(through, 'through');
  const deleted = await removeItems(sql, target, Number.MIN_SAFE_INTEGER, through);
  await sql.run(
    `INSERT INTO acked (target_pubkey, acked_through) VALUES ($1, $2)
      ON CONFLICT (target_pubkey) DO UPDATE SET acked_through = greatest(acked.acked_through, excluded.acked_through)`,
    [target, through],
  );
  return deleted;
}

async function expiredItems(sql: Sql, nowMs: number, limit: number): Promise<ItemHeader[]> {
  assertInteger(nowMs, 'nowMs');
  assertInteger(limit, 'limit');
  return (
    await sql.rows(
      `SELECT target_pubkey, seq, kind, item_id, sender_pubkey, wire_hash, bytes, accepted_at, expires_at
      FROM items WHERE expires_at <= $1 ORDER BY expires_at, target_pubkey, seq LIMIT $2`,
      [nowMs, limit],
    )
  ).map(headerFrom);
}

/** Deletes one item; its dedup row stays as the tombstone until the dedup sweep. */
async function deleteItem(sql: Sql, target: string, seq: number): Promise<void> {
  assertInteger(seq, 'seq');
  await removeItems(sql, target, seq, seq);
}

/** Queue totals for metrics: items queued and the acceptance time of the item nearest expiry. */
async function queueTotals(sql: Sql): Promise<{ items: number; oldestAcceptedAt: number | null }> {
  const row = (await sql.row(`SELECT (SELECT coalesce(sum(items), 0)::bigint FROM queue_usage) AS items,
      (SELECT accepted_at FROM items ORDER BY expires_at LIMIT 1) AS oldest`)) as Row;
  return { items: int(row, 'items'), oldestAcceptedAt: row['oldest'] === null ? null : int(row, 'oldest') };
}

async function dedupWalk(sql: Sql, after: number, limit: number): Promise<DedupWalkRow[]> {
  assertInteger(after, 'after');
  assertInteger(limit, 'limit');
  return (
    await sql.rows(
      `SELECT d.id, d.accepted_at,
        EXISTS (SELECT 1 FROM items AS i WHERE i.target_pubkey = d.target_pubkey AND i.seq = d.seq)::int AS live
      FROM dedup AS d WHERE d.id > $1 ORDER BY d.id LIMIT $2`,
      [after, limit],
    )
  ).map((row) => ({ id: int(row, 'id'), acceptedAt: int(row, 'accepted_at'), live: int(row, 'live') === 1 }));
}

async function queueRefs(sql: Sql, target: string): Promise<QueueRef[]> {
  return (await sql.rows('SELECT seq, item_id, sender_pubkey FROM items WHERE target_pubkey = $1 ORDER BY seq', [target])).map((row) => ({
    seq: int(row, 'seq'),
    itemId: text(row, 'item_id'),
    senderPubkey: text(row, 'sender_pubkey'),
  }));
}

/** Moves one item and its usage charge (queue and sender share; the account stays the one charged). */
async function moveItem(sql: Sql, from: { targetPubkey: string; seq: number }, to: { targetPubkey: string; seq: number }): Promise<void> {
  assertInteger(from.seq, 'seq');
  assertInteger(to.seq, 'seq');
  const row = await sql.row(
    `WITH moved AS (
        UPDATE items SET target_pubkey = $3, seq = $4 WHERE target_pubkey = $1 AND seq = $2 RETURNING sender_pubkey, bytes),
      q_old AS (UPDATE queue_usage SET items = queue_usage.items - 1, bytes = queue_usage.bytes - m.bytes FROM moved m WHERE queue_usage.target_pubkey = $1),
      u_old AS (UPDATE sender_usage SET items = sender_usage.items - 1, bytes = sender_usage.bytes - m.bytes FROM moved m
        WHERE sender_usage.target_pubkey = $1 AND sender_usage.sender_pubkey = m.sender_pubkey),
      q_new AS (INSERT INTO queue_usage (target_pubkey, items, bytes) SELECT $3, 1, bytes FROM moved
        ON CONFLICT (target_pubkey) DO UPDATE SET items = queue_usage.items + 1, bytes = queue_usage.bytes + excluded.bytes),
      u_new AS (INSERT INTO sender_usage (sender_pubkey, target_pubkey, items, bytes) SELECT sender_pubkey, $3, 1, bytes FROM moved
        ON CONFLICT (sender_pubkey, target_pubkey) DO UPDATE SET items = sender_usage.items + 1, bytes = sender_usage.bytes + excluded.bytes)
      SELECT count(*) AS n FROM moved`,
    [from.targetPubkey, from.seq, to.targetPubkey, to.seq],
  );
  if (int(row as Row, 'n') === 0) throw new RangeError(`no item at seq ${from.seq} to move`);
  await sql.run(
    `WITH q AS (DELETE FROM queue_usage WHERE target_pubkey = $1 AND items <= 0)
      DELETE FROM sender_usage WHERE target_pubkey = $1 AND items <= 0`,
    [from.targetPubkey],
  );
}

async function repointDedup(sql: Sql, fromTarget: string, toTarget: string, item?: { senderPubkey: string; itemId: string; seq: number }): Promise<number> {
  if (item === undefined) {
    return sql.run(
      `UPDATE dedup AS d SET target_pubkey = $2 WHERE d.target_pubkey = $1
        AND NOT EXISTS (SELECT 1 FROM dedup AS n WHERE n.target_pubkey = $2 AND n.item_id = d.item_id AND n.sender_pubkey = d.sender_pubkey)`,
      [fromTarget, toTarget],
    );
  }
  assertInteger(item.seq, 'seq');
  return sql.run(
    `UPDATE dedup SET target_pubkey = $2, seq = $5 WHERE target_pubkey = $1 AND item_id = $3 AND sender_pubkey = $4
      AND NOT EXISTS (SELECT 1 FROM dedup AS n WHERE n.target_pubkey = $2 AND n.item_id = $3 AND n.sender_pubkey = $4)`,
    [fromTarget, toTarget, item.itemId, item.senderPubkey, item.seq],
  );
}

const WITHOUT_ITEM = 'NOT EXISTS (SELECT 1 FROM items AS i WHERE i.target_pubkey = d.target_pubkey AND i.seq = d.seq)';

export function itemReader(use: UsePg): ItemReader {
  return {
    async dedup(sender, itemId, target) {
      return getDedup(use(), sender, itemId, target);
    },
    async pull(target, after, limit, maxBytes) {
      return pull(use(), target, after, limit, maxBytes);
    },
    async headSeq(target) {
      return headSeq(use(), target);
    },
    async ackedThrough(target) {
      return ackedThrough(use(), target);
    },
    async expired(nowMs, limit) {
      return expiredItems(use(), nowMs, limit);
    },
    async dedupWalk(after, limit) {
      return dedupWalk(use(), after, limit);
    },
    async queueRefs(target) {
      return queueRefs(use(), target);
    },
    async queueTotals() {
      return queueTotals(use());
    },
  };
}

/**
 * The items a transaction may change. Its dedup lookup first takes the target's lock (locks.ts), so
 * that two pushes of one item to one target, from any process, run their check-then-insert one
 * after the other: the second sees the first's row and answers `duplicate`. The target's usage is
 * read ahead with it, under that lock (a push's next reads, read-ahead.ts).
 */
export function itemTransactor(use: UsePg, locks: TargetLocks, readAhead: ReadAhead): ItemTransactor {
  const writes: Omit<ItemTransactor, keyof ItemReader> = {
    async insert(item, nowMs) {
      return insertItem(use(), item, nowMs);
    },
    async ack(target, through) {
      return ack(use(), target, through);
    },
    async delete(target, seq) {
      await deleteItem(use(), target, seq);
    },
    async deleteDedupRows(ids) {
      for (const id of ids) assertInteger(id, 'id');
      return use().run(`DELETE FROM dedup AS d WHERE d.id = ANY($1::bigint[]) AND ${WITHOUT_ITEM}`, [ids]);
    },
    async allocateSeqs(target, count, nowMs) {
      return allocateSeqs(use(), target, count, nowMs);
    },
    // one statement group per item: a rotation is rare, and each move keeps its usage charge exact
    async moveItems(fromTarget, toTarget, moves) {
      for (const move of moves) await moveItem(use(), { targetPubkey: fromTarget, seq: move.from }, { targetPubkey: toTarget, seq: move.to });
    },
    async repointDedup(fromTarget, toTarget, items) {
      if (items === undefined) return repointDedup(use(), fromTarget, toTarget);
      let moved = 0;
      for (const item of items) moved += await repointDedup(use(), fromTarget, toTarget, item);
      return moved;
    },
    async deleteTombstonesOf(target) {
      return use().run(`DELETE FROM dedup AS d WHERE d.target_pubkey = $1 AND ${WITHOUT_ITEM}`, [target]);
    },
  };
  return {
    ...itemReader(use),
    async dedup(sender, itemId, target) {
      locks.target(target);
      const row = getDedup(use(), sender, itemId, target);
      readUsageAhead(use(), readAhead, sender, target);
      return row;
    },
    ...droppingReadsAhead(readAhead, writes),
  };
}
