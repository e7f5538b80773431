// Creating and upgrading a store: the missing migrations run in ONE transaction together with the
// meta rows, so a failure (or a crash) leaves the store exactly as it was.
import type { DatabaseSync } from 'node:sqlite';
import { StoreMigrationError } from './errors.ts';
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
  finish: (db: DatabaseSync) => void = () => {},
): void {
  const pending = migrations.slice(fromVersion);
  const target = migrations.length;
  db.exec('BEGIN IMMEDIATE');
  let step = 'recording the schema version';
  try {
    for (const migration of pending) {
      step = `schema ${migration.version} (${migration.name})`;
      migration.up(db);
    }
    step = 'recording the schema version';
    const sql = db.createTagStore(4);
    writeMeta(sql, META_SCHEMA_VERSION, String(target));
    finish(db);
    db.exec('COMMIT');
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    const reason = error instanceof Error ? error.message : String(error);
    const what = fromVersion === 0 ? 'creating the relay store' : `upgrading the relay store from schema ${fromVersion} to ${target}`;
    throw new StoreMigrationError(`${what} failed at ${step}: ${reason}; the store was not changed`, { cause: error });
  }
}
