// The meta table in PostgreSQL: epoch, relay key, schema version, heartbeat (names as in the SQLite store).
import { MAX_OPS_LOG_ENTRIES, type MetaReader, type MetaTransactor, type OpsLogEntry, type StoredOpsLogEntry, type StoreMeta } from '../relay-store.ts';
import { assertInteger, int, text } from '../sql/columns.ts';
import { NotARelayStoreError } from '../errors.ts';
import type { Sql, UsePg } from './sql.ts';
import { META_EPOCH, META_HEARTBEAT_AT, META_RELAY_PUBKEY, META_SCHEMA_VERSION, OPS_LOG_KINDS } from '../sql/names.ts';

export async function writeMeta(sql: Sql, key: string, value: string): Promise<void> {
  await sql.run('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
}

function parseInteger(textValue: string | undefined): number | null {
  if (textValue === undefined || !/^(0|[1-9][0-9]*)$/.test(textValue)) return null;
  const value = Number(textValue);
  return Number.isSafeInteger(value) ? value : null;
}

/** The store's meta; `where` names the store in the error when the identifying rows are missing. */
export async function readMeta(sql: Sql, where: string): Promise<StoreMeta> {
  const rows = await sql.rows('SELECT key, value FROM meta WHERE key = ANY($1::text[])', [
    [META_EPOCH, META_RELAY_PUBKEY, META_SCHEMA_VERSION, META_HEARTBEAT_AT],
  ]);
  const values = new Map(rows.map((row) => [text(row, 'key'), text(row, 'value')]));
  const epoch = values.get(META_EPOCH);
  const relayPubkey = values.get(META_RELAY_PUBKEY);
  const schemaVersion = parseInteger(values.get(META_SCHEMA_VERSION));
  if (epoch === undefined || relayPubkey === undefined || schemaVersion === null) {
    throw new NotARelayStoreError(`${where} is not a relay store (its meta is missing or damaged)`);
  }
  return { epoch, relayPubkey, schemaVersion, heartbeatAt: parseInteger(values.get(META_HEARTBEAT_AT)) };
}

async function appendOpsLog(sql: Sql, entry: OpsLogEntry): Promise<void> {
  assertInteger(entry.at, 'at');
  await sql.run('INSERT INTO ops_log (at, kind, detail) VALUES ($1, $2, $3)', [entry.at, entry.kind, JSON.stringify(entry.detail)]);
  await sql.run('DELETE FROM ops_log WHERE id <= (SELECT max(id) FROM ops_log) - $1', [MAX_OPS_LOG_ENTRIES]);
}

async function readOpsLog(sql: Sql, limit: number): Promise<StoredOpsLogEntry[]> {
  assertInteger(limit, 'limit');
  return (await sql.rows('SELECT id, at, kind, detail FROM ops_log ORDER BY id DESC LIMIT $1', [limit])).map((row) => {
    const kind = text(row, 'kind');
    if (!(OPS_LOG_KINDS as readonly string[]).includes(kind)) throw new Error(`relay store damaged: ops_log kind ${kind}`);
    const detail: unknown = JSON.parse(text(row, 'detail'));
    if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) throw new Error('relay store damaged: ops_log detail is not an object');
    return { id: int(row, 'id'), at: int(row, 'at'), kind: kind as StoredOpsLogEntry['kind'], detail: detail as Record<string, unknown> };
  });
}

/** `where` names the store in the error when its meta is missing. */
export function metaReader(use: UsePg, where: string): MetaReader {
  return {
    async get() {
      return readMeta(use(), where);
    },
    async opsLog(limit) {
      return readOpsLog(use(), limit);
    },
  };
}

export function metaTransactor(use: UsePg, where: string): MetaTransactor {
  return {
    ...metaReader(use, where),
    async setEpoch(epoch) {
      await writeMeta(use(), META_EPOCH, epoch);
    },
    async writeHeartbeat(atMs) {
      assertInteger(atMs, 'atMs');
      await writeMeta(use(), META_HEARTBEAT_AT, String(atMs));
    },
    async appendOpsLog(entry) {
      await appendOpsLog(use(), entry);
    },
  };
}
