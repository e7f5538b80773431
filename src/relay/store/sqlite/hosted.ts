// The hosted relay's tables (design §8, schema 3): the cloud key each host key certified, and the
// revocation deny-list. An entry outlives nothing: rows past their `until` are ignored and removed.
import type { DatabaseSync, SQLTagStore } from 'node:sqlite';
import type { AccountReader, AccountTransactor, DenyEntry } from '../accounts.ts';
import { assertInteger, int, text } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';
import { denyFrom } from '../sql/row-records.ts';

/** Expired deny rows removed per write, so one write never turns into a long delete. */
const DENY_SWEEP_BATCH = 1000;

export function cloudKeyOwner(sql: SQLTagStore, jkt: string): string | null {
  const row = sql.get`SELECT host_pubkey FROM cloud_keys WHERE jkt = ${jkt}`;
  return row === undefined ? null : text(row, 'host_pubkey');
}

export function cloudKeyOf(sql: SQLTagStore, hostPubkey: string): string | null {
  const row = sql.get`SELECT jkt FROM cloud_keys WHERE host_pubkey = ${hostPubkey}`;
  return row === undefined ? null : text(row, 'jkt');
}

/** Binds `jkt` to `hostPubkey`, replacing the host's earlier cloud key and the key's earlier host. */
export function bindCloudKey(sql: SQLTagStore, hostPubkey: string, jkt: string, nowMs: number): void {
  assertInteger(nowMs, 'nowMs');
  sql.run`DELETE FROM cloud_keys WHERE host_pubkey = ${hostPubkey} OR jkt = ${jkt}`;
  sql.run`INSERT INTO cloud_keys (host_pubkey, jkt, bound_at) VALUES (${hostPubkey}, ${jkt}, ${nowMs})`;
}

/** Adds entries; one already there keeps the later `until` and takes the new reason. */
export function putDenyEntries(sql: SQLTagStore, entries: DenyEntry[], nowMs: number): void {
  assertInteger(nowMs, 'nowMs');
  sql.run`DELETE FROM deny_list WHERE rowid IN (SELECT rowid FROM deny_list WHERE until_ms <= ${nowMs} LIMIT ${DENY_SWEEP_BATCH})`;
  for (const entry of entries) {
    assertInteger(entry.untilMs, 'untilMs');
    sql.run`INSERT INTO deny_list (kind, value, reason, until_ms, added_at)
            VALUES (${entry.kind}, ${entry.value}, ${entry.reason}, ${entry.untilMs}, ${entry.addedAt})
            ON CONFLICT (kind, value) DO UPDATE SET reason = excluded.reason,
              until_ms = max(until_ms, excluded.until_ms), added_at = excluded.added_at`;
  }
}

/** The live entry denying this host fingerprint or client id (the one that lasts longest), or null. */
export function findDenyEntry(sql: SQLTagStore, hostFp: string, clientId: string | null, nowMs: number): DenyEntry | null {
  assertInteger(nowMs, 'nowMs');
  const row = sql.get`SELECT * FROM deny_list
                      WHERE until_ms > ${nowMs}
                        AND ((kind = 'host_fp' AND value = ${hostFp}) OR (kind = 'client_id' AND value = ${clientId ?? ''} AND ${clientId !== null ? 1 : 0}))
                      ORDER BY until_ms DESC LIMIT 1`;
  return row === undefined ? null : denyFrom(row);
}

export function countLiveDenyEntries(sql: SQLTagStore, nowMs: number): number {
  const row = sql.get`SELECT count(*) AS n FROM deny_list WHERE until_ms > ${nowMs}`;
  return row === undefined ? 0 : int(row, 'n');
}

export function accountReader(use: UseSql): AccountReader {
  return {
    async cloudKeyOwner(jkt) {
      return cloudKeyOwner(use(), jkt);
    },
    async cloudKeyOf(hostPubkey) {
      return cloudKeyOf(use(), hostPubkey);
    },
    async findDenyEntry(hostFp, clientId, nowMs) {
      return findDenyEntry(use(), hostFp, clientId, nowMs);
    },
    async countLiveDenyEntries(nowMs) {
      return countLiveDenyEntries(use(), nowMs);
    },
  };
}

export function accountTransactor(use: UseSql): AccountTransactor {
  return {
    ...accountReader(use),
    async bindCloudKey(hostPubkey, jkt, nowMs) {
      bindCloudKey(use(), hostPubkey, jkt, nowMs);
    },
    async putDenyEntries(entries, nowMs) {
      putDenyEntries(use(), entries, nowMs);
    },
  };
}

/**
 * Restore (design §5): folds the live store's deny-list into the restored one (attached as `live`),
 * since an entry only ever restricts; an entry in both keeps the later `until`. Returns the rows written.
 */
export function carryForwardDenyList(db: DatabaseSync): number {
  const liveHasList = db.prepare(`SELECT 1 FROM live.sqlite_master WHERE type = 'table' AND name = 'deny_list'`).get() !== undefined;
  if (!liveHasList) return 0;
  return Number(
    db
      .prepare(`INSERT INTO main.deny_list (kind, value, reason, until_ms, added_at)
      SELECT kind, value, reason, until_ms, added_at FROM live.deny_list WHERE true
      ON CONFLICT (kind, value) DO UPDATE SET reason = excluded.reason, until_ms = excluded.until_ms, added_at = excluded.added_at
      WHERE excluded.until_ms > deny_list.until_ms`)
      .run().changes,
  );
}
