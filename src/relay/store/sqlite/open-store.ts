// Opening the relay store file: create it (dir 0700, file 0600) or check that it is this relay's
// store at a schema this binary understands, then upgrade it if it is older.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fsyncPath } from '../../../common/fsync-path.ts';
import type { StoreMeta } from '../relay-store.ts';
import { randomEpoch } from '../random-epoch.ts';
import { NotARelayStoreError, StoreOpenError } from '../errors.ts';
import { readMeta, writeMeta } from './meta.ts';
import { applyMigrations } from './migrate.ts';
import { latestVersion, MIGRATIONS, type Migration } from './migrations/index.ts';
import { createPrivateFile } from '../../../common/private-file.ts';
import { SqliteRelayStore, type SqliteRelayStoreOptions } from './sqlite-relay-store.ts';
import { walFileSyncer, type WalSyncer } from './wal-sync.ts';
import { checkStore } from '../sql/check-store.ts';
import { META_CREATED_AT, META_EPOCH, META_RELAY_PUBKEY } from '../sql/names.ts';

export const RELAY_DB_FILE = 'relay.db';
/** How long a statement waits for another connection's lock (a backup, an operator read) before failing. */
export const BUSY_TIMEOUT_MS = 5_000;
const SQLITE_NOTADB = 26;

export interface OpenSqliteRelayStoreOptions extends Omit<SqliteRelayStoreOptions, 'walSyncer'> {
  /** default: fdatasync of relay.db-wal (tests inject one they control) */
  walSyncer?: WalSyncer;
  dir: string;
  /** base64 public key of the relay running this store */
  relayPubkey: string;
  /** clock for the store's created_at (default Date.now) */
  nowMs?: () => number;
  /** the epoch of a new store (default: 16 random bytes, base64url) */
  newEpoch?: () => string;
  /** the schema steps (default MIGRATIONS); tests add one to prove the upgrade path */
  migrations?: readonly Migration[];
}

export async function openSqliteRelayStore(options: OpenSqliteRelayStoreOptions): Promise<SqliteRelayStore> {
  const { dir, relayPubkey } = options;
  const migrations = options.migrations ?? MIGRATIONS;
  const binaryVersion = latestVersion(migrations);
  const path = join(dir, RELAY_DB_FILE);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    createPrivateFile(path);
  } catch (error) {
    throw new StoreOpenError(`cannot create the relay store in ${dir}: ${(error as Error).message}`, { cause: error });
  }
  const db = openDatabase(path, dir, false);
  try {
    const found = probeStore(db, dir);
    if (found !== null) checkStore(found, dir, binaryVersion, relayPubkey);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    if (found === null) {
      const epoch = (options.newEpoch ?? randomEpoch)();
      const createdAt = (options.nowMs ?? Date.now)();
      applyMigrations(db, migrations, 0, (sql) => {
        writeMeta(sql, META_EPOCH, epoch);
        writeMeta(sql, META_RELAY_PUBKEY, relayPubkey);
        writeMeta(sql, META_CREATED_AT, String(createdAt));
      });
    } else if (found.schemaVersion < binaryVersion) {
      applyMigrations(db, migrations, found.schemaVersion);
    }
  } catch (error) {
    db.close();
    throw error;
  }
  // Commits only reach the OS; the store syncs the WAL itself before it settles them (wal-sync.ts).
  // The WAL file exists now and stays while the store is open: its directory entry is made durable once.
  db.exec('PRAGMA synchronous = NORMAL');
  // a store shared by several relay processes waits for the write lock on timers, not in SQLite's busy handler
  if (options.sharedWriters === true) db.exec('PRAGMA busy_timeout = 0');
  fsyncPath(dir);
  const reader = openDatabase(path, dir, false);
  reader.exec('PRAGMA query_only = ON');
  return new SqliteRelayStore(db, reader, dir, { ...options, walSyncer: options.walSyncer ?? walFileSyncer(`${path}-wal`) });
}

/**
 * The meta of the store in `dir`, read through a read-only connection (safe while the relay runs).
 * Throws NotARelayStoreError, StoreSchemaTooNewError, or StoreKeyMismatchError when `relayPubkey`
 * is given and differs.
 */
export function readStoreMeta(dir: string, options: { relayPubkey?: string } = {}): StoreMeta {
  const path = join(dir, RELAY_DB_FILE);
  if (!existsSync(path)) throw new NotARelayStoreError(`there is no relay store in ${dir}`);
  const db = openDatabase(path, dir, true);
  try {
    const found = probeStore(db, dir);
    if (found === null) throw new NotARelayStoreError(`${dir} holds an empty database, not a relay store`);
    checkStore(found, dir, latestVersion(MIGRATIONS), options.relayPubkey);
    return found;
  } finally {
    db.close();
  }
}

function openDatabase(path: string, dir: string, readOnly: boolean): DatabaseSync {
  try {
    return new DatabaseSync(path, { readOnly, timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    throw new StoreOpenError(`cannot open the relay store in ${dir}: ${(error as Error).message}`, { cause: error });
  }
}

/** The store's meta, or null for a database without any table (a new store). */
function probeStore(db: DatabaseSync, dir: string): StoreMeta | null {
  let tables: string[];
  try {
    tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`)
      .all()
      .map((row) => String(row.name));
  } catch (error) {
    if ((error as { errcode?: unknown }).errcode === SQLITE_NOTADB) {
      throw new NotARelayStoreError(`${join(dir, RELAY_DB_FILE)} is not a relay store (not an SQLite database)`, { cause: error });
    }
    throw new StoreOpenError(`cannot read the relay store in ${dir}: ${(error as Error).message}`, { cause: error });
  }
  if (tables.length === 0) return null;
  if (!tables.includes('meta')) throw new NotARelayStoreError(`${join(dir, RELAY_DB_FILE)} is an SQLite database but not a relay store`);
  return readMeta(db.createTagStore(4), `${join(dir, RELAY_DB_FILE)}`);
}
