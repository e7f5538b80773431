// The meta table: what identifies a store (epoch, relay key, schema version) and its heartbeat.
import type { SQLTagStore } from 'node:sqlite';
import type { StoreMeta } from '../relay-store.ts';
import { NotARelayStoreError } from '../errors.ts';
import { META_EPOCH, META_HEARTBEAT_AT, META_RELAY_PUBKEY, META_SCHEMA_VERSION } from '../sql/names.ts';

export function writeMeta(sql: SQLTagStore, key: string, value: string): void {
  sql.run`INSERT INTO meta (key, value) VALUES (${key}, ${value})
          ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
}

function metaValue(sql: SQLTagStore, key: string): string | null {
  const row = sql.get`SELECT value FROM meta WHERE key = ${key}`;
  return typeof row?.value === 'string' ? row.value : null;
}

function parseInteger(textValue: string | null): number | null {
  if (textValue === null || !/^(0|[1-9][0-9]*)$/.test(textValue)) return null;
  const value = Number(textValue);
  return Number.isSafeInteger(value) ? value : null;
}

/** The store's meta; `where` names the store in the error when the identifying rows are missing. */
export function readMeta(sql: SQLTagStore, where: string): StoreMeta {
  const epoch = metaValue(sql, META_EPOCH);
  const relayPubkey = metaValue(sql, META_RELAY_PUBKEY);
  const schemaVersion = parseInteger(metaValue(sql, META_SCHEMA_VERSION));
  if (epoch === null || relayPubkey === null || schemaVersion === null) {
    throw new NotARelayStoreError(`${where} is not a relay store (its meta is missing or damaged)`);
  }
  return { epoch, relayPubkey, schemaVersion, heartbeatAt: parseInteger(metaValue(sql, META_HEARTBEAT_AT)) };
}
