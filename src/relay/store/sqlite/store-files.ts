// What the operator's tools (src/relay/ops/) do to store files, in SQL: the online backup, the
// integrity check and counts of a copy, the operations log read and appended from another process,
// and a restore's carry-forward from the live store. Nothing here decides policy; ops/ does.
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { backup, DatabaseSync } from 'node:sqlite';
import type { OpsLogEntry, StoredOpsLogEntry, StoreMeta } from '../relay-store.ts';
import { int, type Row } from '../sql/columns.ts';
import { NotARelayStoreError, StoreOpenError } from '../errors.ts';
import { ack } from './items.ts';
import { readMeta } from './meta.ts';
import { appendOpsLog, readOpsLog } from './ops-log.ts';
import { BUSY_TIMEOUT_MS, RELAY_DB_FILE } from './open-store.ts';
import { carryForwardDenyList } from './hosted.ts';

/** What a store file holds, for a backup receipt. */
export interface StoreCounts {
  live_enrolments: number;
  revoked_enrolments: number;
  items: number;
  item_bytes: number;
  dedup_rows: number;
  sender_lists: number;
  enc_ads: number;
  targets: number;
}

/** What a restore took over from the live store (design §5: only what ever restricts). */
export interface CarriedForward {
  revocations: number;
  sender_lists: number;
  enc_ads: number;
  seqs: number;
  acked: number;
  /** restored items deleted because the live store had them acked already */
  acked_items_deleted: number;
}

function liveStorePath(dir: string): string {
  const path = join(dir, RELAY_DB_FILE);
  if (!existsSync(path)) throw new NotARelayStoreError(`there is no relay store in ${dir}`);
  return path;
}

function withDatabase<T>(path: string, readOnly: boolean, fn: (db: DatabaseSync) => T): T {
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { readOnly, timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    throw new StoreOpenError(`cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    return fn(db);
  } finally {
    if (db.isTransaction) db.exec('ROLLBACK');
    db.close();
  }
}

/**
 * Copies the store in `dir` to `destPath` (an existing empty file) with SQLite's online backup, in
 * one step: a consistent snapshot that a busy writer cannot restart, and WAL readers never block it.
 */
export async function onlineBackup(dir: string, destPath: string): Promise<void> {
  const source = new DatabaseSync(liveStorePath(dir), { readOnly: true, timeout: BUSY_TIMEOUT_MS });
  try {
    await backup(source, destPath, { rate: -1 });
  } finally {
    source.close();
  }
}

/** Makes a backup copy one self-contained file (rollback journal instead of WAL). */
export function makeStandalone(path: string): void {
  withDatabase(path, false, (db) => db.exec('PRAGMA journal_mode = DELETE'));
}

/** Throws unless SQLite's integrity_check passes on the file (a copy only this process uses); `what` names it in the message. */
export function checkIntegrity(path: string, what: string): void {
  // read-write: a read-only connection cannot read a WAL-mode file that has no -shm beside it
  withDatabase(path, false, (db) => {
    let problems: string[];
    try {
      problems = db
        .prepare('PRAGMA integrity_check(5)')
        .all()
        .map((row) => String(Object.values(row)[0]));
    } catch (error) {
      throw new NotARelayStoreError(`${what} is not a relay store (${(error as Error).message})`, { cause: error });
    }
    if (problems.length !== 1 || problems[0] !== 'ok') throw new StoreOpenError(`${what} is damaged: ${problems.join('; ')}`);
  });
}

/** Meta and counts of a relay store file (it must be one). */
export function describeStoreFile(path: string, what: string): { meta: StoreMeta; counts: StoreCounts } {
  return withDatabase(path, true, (db) => {
    const meta = readMeta(db.createTagStore(2), what);
    const row = db
      .prepare(`SELECT
        (SELECT count(*) FROM enrolments WHERE revoked_at IS NULL) AS live_enrolments,
        (SELECT count(*) FROM enrolments WHERE revoked_at IS NOT NULL) AS revoked_enrolments,
        (SELECT count(*) FROM items) AS items,
        (SELECT coalesce(sum(bytes), 0) FROM items) AS item_bytes,
        (SELECT count(*) FROM dedup) AS dedup_rows,
        (SELECT count(*) FROM sender_lists) AS sender_lists,
        (SELECT count(*) FROM enc_ads) AS enc_ads,
        (SELECT count(*) FROM seqs) AS targets`)
      .get() as Row;
    const counts = Object.fromEntries(Object.keys(row).map((key) => [key, int(row, key)])) as unknown as StoreCounts;
    return { meta, counts };
  });
}

/** Appends one entry to the store in `dir` through a connection of its own (safe while the relay serves). */
export function appendOpsLogToStore(dir: string, entry: OpsLogEntry): void {
  withDatabase(liveStorePath(dir), false, (db) => {
    db.exec('BEGIN IMMEDIATE');
    appendOpsLog(db.createTagStore(2), entry);
    db.exec('COMMIT');
  });
}

/** The newest `limit` entries of the store in `dir`, read-only (safe while the relay serves). */
export function readOpsLogOfStore(dir: string, limit: number): StoredOpsLogEntry[] {
  return withDatabase(liveStorePath(dir), true, (db) => readOpsLog(db.createTagStore(2), limit));
}

/**
 * Folds into the (restored) store in `restoredDir` what the live store in `liveDir` knows that only
 * ever restricts: revocations, newer sender lists and enc-ads, higher next_seq, higher acked_through
 * (deleting restored items at or below it), and the live store's longer operations log. One
 * transaction; both stores must be at this binary's schema or older, and no relay may serve either.
 */
export function carryForward(restoredDir: string, liveDir: string): CarriedForward {
  return withDatabase(join(restoredDir, RELAY_DB_FILE), false, (db) => {
    db.prepare('ATTACH DATABASE ? AS live').run(liveStorePath(liveDir));
    const changes = (sql: string): number => Number(db.prepare(sql).run().changes);
    db.exec('BEGIN IMMEDIATE');
    const revocations =
      changes(`UPDATE main.enrolments SET revoked_at = l.revoked_at FROM live.enrolments AS l
        WHERE l.host_pubkey = enrolments.host_pubkey AND l.revoked_at IS NOT NULL AND enrolments.revoked_at IS NULL`) +
      changes(`INSERT INTO main.enrolments (host_pubkey, host_name, owner_fp, account, org, authorized_by, enrolled_at, revoked_at)
        SELECT host_pubkey, host_name, owner_fp, account, org, authorized_by, enrolled_at, revoked_at FROM live.enrolments AS l
        WHERE l.revoked_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM main.enrolments AS m WHERE m.host_pubkey = l.host_pubkey)`);
    changes(`UPDATE main.counters SET value = (SELECT count(*) FROM main.enrolments WHERE revoked_at IS NULL) WHERE name = 'live_enrolments'`);
    const senderLists = changes(`INSERT INTO main.sender_lists (target_pubkey, senders, iat, record, sig)
        SELECT target_pubkey, senders, iat, record, sig FROM live.sender_lists WHERE true
        ON CONFLICT (target_pubkey) DO UPDATE SET senders = excluded.senders, iat = excluded.iat, record = excluded.record, sig = excluded.sig
        WHERE excluded.iat > sender_lists.iat`);
    const encAds = changes(`INSERT INTO main.enc_ads (host_pubkey, enc_pub, version, record, sig, iat, exp, at, v1_sig)
        SELECT host_pubkey, enc_pub, version, record, sig, iat, exp, at, v1_sig FROM live.enc_ads WHERE true
        ON CONFLICT (host_pubkey) DO UPDATE SET enc_pub = excluded.enc_pub, version = excluded.version, record = excluded.record,
          sig = excluded.sig, iat = excluded.iat, exp = excluded.exp, at = excluded.at, v1_sig = excluded.v1_sig
        WHERE excluded.iat > enc_ads.iat`);
    const seqs = changes(`INSERT INTO main.seqs (target_pubkey, next_seq) SELECT target_pubkey, next_seq FROM live.seqs WHERE true
        ON CONFLICT (target_pubkey) DO UPDATE SET next_seq = excluded.next_seq WHERE excluded.next_seq > seqs.next_seq`);
    let acked = 0;
    let ackedItemsDeleted = 0;
    const sql = db.createTagStore(4);
    for (const row of db
      .prepare(`SELECT l.target_pubkey, l.acked_through FROM live.acked AS l
        LEFT JOIN main.acked AS m ON m.target_pubkey = l.target_pubkey
        WHERE m.acked_through IS NULL OR l.acked_through > m.acked_through`)
      .iterate()) {
      ackedItemsDeleted += ack(sql, String(row.target_pubkey), int(row, 'acked_through'));
      acked += 1;
    }
    const liveHasLog = db.prepare(`SELECT 1 FROM live.sqlite_master WHERE type = 'table' AND name = 'ops_log'`).get() !== undefined;
    if (liveHasLog) {
      changes('DELETE FROM main.ops_log');
      changes('INSERT INTO main.ops_log (id, at, kind, detail) SELECT id, at, kind, detail FROM live.ops_log');
    }
    carryForwardDenyList(db);
    db.exec('COMMIT');
    db.exec('DETACH DATABASE live');
    return { revocations, sender_lists: senderLists, enc_ads: encAds, seqs, acked, acked_items_deleted: ackedItemsDeleted };
  });
}

/**
 * Folds the store's WAL into relay.db and removes the -wal and -shm files, so that relay.db alone is
 * the store (a leftover WAL beside a replaced relay.db would be replayed into it). Only while no
 * relay serves the store.
 */
export function settleWal(dir: string): void {
  const path = join(dir, RELAY_DB_FILE);
  if (existsSync(path)) {
    withDatabase(path, false, (db) => {
      const row = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as Row | undefined;
      if (row !== undefined && int(row, 'busy') !== 0) throw new StoreOpenError(`the store in ${dir} is in use: its WAL could not be checkpointed`);
    });
  }
  for (const suffix of ['-wal', '-shm']) {
    const extra = `${path}${suffix}`;
    if (suffix === '-wal' && existsSync(extra) && statSync(extra).size > 0 && existsSync(path)) {
      throw new StoreOpenError(`the store in ${dir} still has an unapplied WAL after a checkpoint`);
    }
    rmSync(extra, { force: true });
  }
}
