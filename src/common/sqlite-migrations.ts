// The one migration runner of the host store and the relay store. A schema is a list of numbered
// migrations (1, 2, 3… in files 00N-*.ts); migration N brings a database from version N-1 to N.
// The missing ones run in ONE transaction together with the new version number (and whatever the
// caller writes with it), so a failure or a crash leaves the database exactly as it was. Add a
// migration, never edit a shipped one. Where the version is kept differs (the host: PRAGMA
// user_version; the relay: a meta row), so the caller reads and writes it.
import type { DatabaseSync } from 'node:sqlite';

/** One numbered schema step. `up` runs inside the upgrade transaction; it must not BEGIN/COMMIT. */
export interface Migration {
  version: number;
  /** a few words for the error message when it fails */
  name: string;
  up(db: DatabaseSync): void;
}

export interface MigrationRun {
  /** what the database is, for messages: "host store", "relay store" */
  store: string;
  /** the version the database is at, read inside the upgrade transaction (0: empty) */
  readVersion(db: DatabaseSync): number;
  /** records `version` inside the upgrade transaction */
  writeVersion(db: DatabaseSync, version: number): void;
  /** more writes that commit with the upgrade (the relay's meta rows of a new store) */
  finish?(db: DatabaseSync): void;
  /** the error thrown, with a message for the operator (a newer schema, a failed step) */
  newError(message: string, options: ErrorOptions): Error;
}

/** The version a migration list brings a database to; throws unless it is numbered 1, 2, 3… */
export function latestVersion(migrations: readonly { version: number }[]): number {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new TypeError(`migrations must be numbered 1..N in order; found ${migration.version} at position ${index + 1}`);
    }
  });
  return migrations.length;
}

/** The refusal of a database written by a newer agentmbx. */
export function schemaTooNewMessage(store: string, found: number, known: number): string {
  return `the ${store} has schema version ${found}, newer than this agentmbx (${known}): upgrade agentmbx`;
}

/**
 * Brings `db` to the latest of `migrations` in one BEGIN IMMEDIATE transaction (another process
 * opening the same file waits, then finds it done). Refuses a database whose version is newer than
 * the list; rolls back and throws `run.newError` when a step fails. Returns the version it found.
 */
export function applyMigrations(db: DatabaseSync, migrations: readonly Migration[], run: MigrationRun): number {
  const target = latestVersion(migrations);
  let found = 0;
  let step = `reading the ${run.store}'s schema version`;
  db.exec('BEGIN IMMEDIATE');
  try {
    found = run.readVersion(db);
    if (found > target) {
      db.exec('ROLLBACK');
      throw run.newError(schemaTooNewMessage(run.store, found, target), {});
    }
    for (const migration of migrations.slice(found)) {
      step = `schema ${migration.version} (${migration.name})`;
      migration.up(db);
    }
    step = 'recording the schema version';
    if (found < target) run.writeVersion(db, target);
    run.finish?.(db);
    db.exec('COMMIT');
    return found;
  } catch (error) {
    if (!db.isTransaction) throw error;
    // SQLite may have rolled back by itself (a full disk): the error to report is the first one
    try {
      db.exec('ROLLBACK');
    } catch {
      // the connection ends the transaction either way
    }
    const reason = error instanceof Error ? error.message : String(error);
    const what = found === 0 ? `creating the ${run.store}` : `upgrading the ${run.store} from schema ${found} to ${target}`;
    throw run.newError(`${what} failed at ${step}: ${reason}; the ${run.store} was not changed`, { cause: error });
  }
}
