// The operations log table (schema 2): restores, epoch rotations, backups.
import type { SQLTagStore } from 'node:sqlite';
import { MAX_OPS_LOG_ENTRIES, type OpsLogEntry, type OpsLogKind, type StoredOpsLogEntry } from '../relay-store.ts';
import { assertInteger, int, text } from '../sql/columns.ts';
import { OPS_LOG_KINDS } from '../sql/names.ts';

export function appendOpsLog(sql: SQLTagStore, entry: OpsLogEntry): void {
  assertInteger(entry.at, 'at');
  sql.run`INSERT INTO ops_log (at, kind, detail) VALUES (${entry.at}, ${entry.kind}, ${JSON.stringify(entry.detail)})`;
  sql.run`DELETE FROM ops_log WHERE id <= (SELECT max(id) FROM ops_log) - ${MAX_OPS_LOG_ENTRIES}`;
}

export function readOpsLog(sql: SQLTagStore, limit: number): StoredOpsLogEntry[] {
  assertInteger(limit, 'limit');
  return sql.all`SELECT id, at, kind, detail FROM ops_log ORDER BY id DESC LIMIT ${limit}`.map((row) => {
    const kind = text(row, 'kind');
    if (!(OPS_LOG_KINDS as readonly string[]).includes(kind)) throw new Error(`relay store damaged: ops_log kind ${kind}`);
    const detail: unknown = JSON.parse(text(row, 'detail'));
    if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) throw new Error('relay store damaged: ops_log detail is not an object');
    return { id: int(row, 'id'), at: int(row, 'at'), kind: kind as OpsLogKind, detail: detail as Record<string, unknown> };
  });
}
