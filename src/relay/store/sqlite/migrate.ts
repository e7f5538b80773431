// Creating and upgrading a store: the missing migrations run in ONE transaction together with the
// meta rows, so a failure (or a crash) leaves the store exactly as it was.
import type { DatabaseSync, SQLTagStore } from 'node:sqlite';
import { StoreMigrationError } from '../errors.ts';
import { META_SCHEMA_VERSION, writeMeta } from './meta.ts';
import type { Migration } from './migrations/index.ts';

/**
 * Runs `migrations` after `fromVersion`, records the new schema_version, then `finish` (more meta
 * rows for a new store), and commits. Rolls back and throws StoreMigrationError on any failure.
 */
export function applyMigrations(
  db: DatabaseSync,
  migrations: readonly Migration[],
  fromVersion: number,
  finish: (sql: SQLTagStore) => void = () => {},
): void {
  const target = migrations.length;
  let step = '';
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const migration of migrations.slice(fromVersion)) {
      step = `schema ${migration.version} (${migration.name})`;
      migration.up(db);
    }
    step = 'writing the store meta';
    const sql = db.createTagStore(4);
    writeMeta(sql, META_SCHEMA_VERSION, String(target));
    finish(sql);
    db.exec('COMMIT');
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    const reason = error instanceof Error ? error.message : String(error);
    const what = fromVersion === 0 ? 'creating the relay store' : `upgrading the relay store from schema ${fromVersion} to ${target}`;
    throw new StoreMigrationError(`${what} failed at ${step}: ${reason}; the store was not changed`, { cause: error });
  }
}
