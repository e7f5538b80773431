// Creating and upgrading a relay store with the shared runner (common/sqlite-migrations.ts): the
// missing migrations run in ONE transaction together with the meta rows, so a failure (or a crash)
// leaves the store exactly as it was. The relay keeps its schema version in the meta table.
import type { DatabaseSync, SQLTagStore } from 'node:sqlite';
import { applyMigrations as runMigrations } from '../../../common/sqlite-migrations.ts';
import { StoreMigrationError } from '../errors.ts';
import { writeMeta } from './meta.ts';
import type { Migration } from './migrations/index.ts';
import { META_SCHEMA_VERSION } from '../sql/names.ts';

/**
 * Runs `migrations` after `fromVersion` (what the store's meta says, read before), records the new
 * schema_version, then `finish` (more meta rows for a new store), and commits. Rolls back and
 * throws StoreMigrationError on any failure.
 */
export function applyMigrations(db: DatabaseSync, migrations: readonly Migration[], fromVersion: number, finish: (sql: SQLTagStore) => void = () => {}): void {
  runMigrations(db, migrations, {
    store: 'relay store',
    readVersion: () => fromVersion,
    writeVersion: (tx, version) => writeMeta(tx.createTagStore(4), META_SCHEMA_VERSION, String(version)),
    finish: (tx) => finish(tx.createTagStore(4)),
    newError: (message, options) => new StoreMigrationError(message, options),
  });
}
