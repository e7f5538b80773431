// Opening a PostgreSQL relay store (`postgres://…`): connect, then — under a lock that makes relay
// processes starting together take turns — create the schema in an empty database, or check that
// the database holds this relay's store at a schema this binary knows and upgrade it if older. The
// migrations and the meta rows run in ONE transaction (PostgreSQL's DDL is transactional), so a
// failure leaves the database exactly as it was.
import pg from 'pg';
import { NotARelayStoreError, StoreMigrationError, StoreOpenError } from '../errors.ts';
import { DEFAULT_GROUP_COMMIT, type GroupCommitPolicy } from '../group-commit-policy.ts';
import { randomEpoch } from '../random-epoch.ts';
import type { StoredOpsLogEntry, StoreMeta } from '../relay-store.ts';
import { int, type Row } from '../sql/columns.ts';
import { latestVersion } from '../../../common/sqlite-migrations.ts';
import { metaReader, readMeta, writeMeta } from './meta.ts';
import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, type PostgresMigration } from './migrations/index.ts';
import { ReadSlots } from './read-slots.ts';
import { PostgresRelayStore } from './postgres-relay-store.ts';
import { STORE_LOCK_QUERY_TIMEOUT_MS, takeStoreLock, type StoreLockOptions } from './store-lock.ts';
import { sqlOver, STORE_TYPES, type Sql } from './sql.ts';
import { describeStoreUrl } from '../store-url.ts';
import { checkStore } from '../sql/check-store.ts';
import { META_CREATED_AT, META_EPOCH, META_RELAY_PUBKEY, META_SCHEMA_VERSION } from '../sql/names.ts';

/** Connections one relay process keeps to the database (each runs one read or transaction at a time). */
export const POSTGRES_POOL_SIZE = 16;
/** How long a connection attempt may take before the open (or a transaction) fails. */
export const POSTGRES_CONNECT_TIMEOUT_MS = 10_000;
/** The advisory lock that serializes schema set-up among relay processes starting at once. */
const SCHEMA_LOCK = 'agentmbx-relay-schema';

export interface OpenPostgresRelayStoreOptions {
  /** postgres://user[:password]@host[:port]/database[?…] */
  url: string;
  /** base64 public key of the relay running this store */
  relayPubkey: string;
  /** clock for the store's created_at (default Date.now) */
  nowMs?: () => number;
  /** the epoch of a new store (default randomEpoch) */
  newEpoch?: () => string;
  /** the schema steps (default POSTGRES_MIGRATIONS); tests add one to prove the upgrade path */
  migrations?: readonly PostgresMigration[];
  /** connections kept (default POSTGRES_POOL_SIZE) */
  poolSize?: number;
  /** how long a checkout from the pool may wait (default POSTGRES_CONNECT_TIMEOUT_MS) */
  checkoutTimeoutMs?: number;
  /** an offline operation: refused while any relay process serves the store, and no relay starts meanwhile */
  exclusive?: boolean;
  /** how many transactions one commit group takes at most (maxItems; default DEFAULT_GROUP_COMMIT) */
  groupCommit?: GroupCommitPolicy;
  /** told after every COMMIT of a group: how many transactions it held, how long it took */
  onGroupCommit?: (size: number, latencyMs: number) => void;
  /** the epoch the process serves once it has read one: a lost store lock taken again must find it unchanged (store-lock.ts) */
  servedEpoch?: StoreLockOptions['servedEpoch'];
  /** told when the store lock is lost and when it is held again */
  onLockState?: StoreLockOptions['onLockState'];
  /** runs the store lock's periodic check (tests fire it by hand) */
  lockCheckTicker?: StoreLockOptions['checkTicker'];
}

export function clientConfig(url: string): pg.ClientConfig {
  // pg's own parse error carries the whole URL (its password too): refuse it here, without a cause
  if (!URL.canParse(url)) throw new StoreOpenError('the relay store URL does not parse: check --store or MBX_RELAY_STORE');
  return {
    connectionString: url,
    types: STORE_TYPES,
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
    application_name: 'agentmbx-relay',
    // a COMMIT returns only once its WAL record is flushed, whatever the server's default
    options: '-c synchronous_commit=on',
  };
}

function cannotConnect(where: string, error: unknown): StoreOpenError {
  return new StoreOpenError(`cannot connect to the relay store at ${where}: ${(error as Error).message}`, { cause: error });
}

/** A client of its own (outside the pool), connected, or a StoreOpenError naming the database. */
export async function connectedClient(url: string, where: string, extra: pg.ClientConfig = {}): Promise<pg.Client> {
  const client = new pg.Client({ ...clientConfig(url), ...extra });
  // a dropped connection fails its next query; its error event must not end the process
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw cannotConnect(where, error);
  }
  return client;
}

export async function openPostgresRelayStore(options: OpenPostgresRelayStoreOptions): Promise<PostgresRelayStore> {
  const where = describeStoreUrl(options.url);
  const migrations = options.migrations ?? POSTGRES_MIGRATIONS;
  const lock = await takeStoreLock({
    where,
    exclusive: options.exclusive === true,
    // named for an operator's pg_stat_activity; TCP keepalive and a statement timeout find a cut
    connect: () =>
      connectedClient(options.url, where, { application_name: 'agentmbx-relay-lock', keepAlive: true, query_timeout: STORE_LOCK_QUERY_TIMEOUT_MS }),
    ...(options.servedEpoch ? { servedEpoch: options.servedEpoch } : {}),
    ...(options.onLockState ? { onLockState: options.onLockState } : {}),
    ...(options.lockCheckTicker ? { checkTicker: options.lockCheckTicker } : {}),
  });
  const poolSize = options.poolSize ?? POSTGRES_POOL_SIZE;
  const checkoutTimeoutMs = options.checkoutTimeoutMs ?? POSTGRES_CONNECT_TIMEOUT_MS;
  const pool = new pg.Pool({ ...clientConfig(options.url), max: poolSize, connectionTimeoutMillis: checkoutTimeoutMs });
  // an idle connection the server dropped (a restart) is replaced on the next checkout; its error must not end the process
  pool.on('error', () => {});
  // nor may a connection lost while a read or transaction holds it (the pool listens only to idle
  // ones): its statements fail with the loss, and it is not pooled again
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  try {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw cannotConnect(where, error);
    }
    try {
      await setUpSchema(sqlOver(client), where, migrations, options);
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end();
    await lock.end();
    throw error;
  }
  return new PostgresRelayStore(
    pool,
    new ReadSlots(poolSize, checkoutTimeoutMs),
    where,
    options.groupCommit ?? DEFAULT_GROUP_COMMIT,
    lock,
    options.onGroupCommit,
  );
}

async function setUpSchema(sql: Sql, where: string, migrations: readonly PostgresMigration[], options: OpenPostgresRelayStoreOptions): Promise<void> {
  const binaryVersion = latestVersion(migrations);
  await sql.exec('BEGIN');
  let step = 'reading the store';
  let fromVersion = 0;
  try {
    await sql.run('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [SCHEMA_LOCK]);
    const found = await probeStore(sql, where);
    if (found !== null) checkStore(found, where, binaryVersion, options.relayPubkey);
    fromVersion = found?.schemaVersion ?? 0;
    for (const migration of migrations.slice(fromVersion)) {
      step = `schema ${migration.version} (${migration.name})`;
      await sql.script(migration.sql);
    }
    step = 'writing the store meta';
    if (fromVersion < binaryVersion) await writeMeta(sql, META_SCHEMA_VERSION, String(binaryVersion));
    if (found === null) {
      await writeMeta(sql, META_EPOCH, (options.newEpoch ?? randomEpoch)());
      await writeMeta(sql, META_RELAY_PUBKEY, options.relayPubkey);
      await writeMeta(sql, META_CREATED_AT, String((options.nowMs ?? Date.now)()));
    }
    await sql.exec('COMMIT');
  } catch (error) {
    await sql.exec('ROLLBACK').catch(() => {});
    if (error instanceof StoreOpenError) throw error;
    const what = fromVersion === 0 ? 'creating the relay store' : `upgrading the relay store from schema ${fromVersion} to ${binaryVersion}`;
    throw new StoreMigrationError(`${what} at ${where} failed at ${step}: ${(error as Error).message}; the store was not changed`, { cause: error });
  }
}

/** The store's meta, or null for a database without tables of its own (a new store). */
async function probeStore(sql: Sql, where: string): Promise<StoreMeta | null> {
  const row = (await sql.row(`SELECT (to_regclass('meta') IS NOT NULL)::int AS has_meta,
      EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema())::int AS has_tables`)) as Row;
  if (int(row, 'has_meta') === 1) return readMeta(sql, where);
  if (int(row, 'has_tables') === 1) throw new NotARelayStoreError(`${where} is a PostgreSQL database with tables of its own, not a relay store`);
  return null;
}

/**
 * The meta of the store at `url`, through a connection of its own in a read-only transaction (safe
 * while relays serve it). Throws NotARelayStoreError, StoreSchemaTooNewError, or
 * StoreKeyMismatchError when `relayPubkey` is given and differs.
 */
export async function readPostgresStoreMeta(url: string, options: { relayPubkey?: string } = {}): Promise<StoreMeta> {
  return readOnly(url, async (_sql, meta) => {
    checkStore(meta, describeStoreUrl(url), POSTGRES_SCHEMA_VERSION, options.relayPubkey);
    return meta;
  });
}

/** The newest `limit` entries of the operations log of the store at `url`, read-only (safe while relays serve it). */
export async function readPostgresOpsLog(url: string, limit: number): Promise<StoredOpsLogEntry[]> {
  return readOnly(url, (sql) => metaReader(() => sql, describeStoreUrl(url)).opsLog(limit));
}

/** Runs `fn` in a read-only transaction on a connection of its own, once the database proved to hold a relay store. */
async function readOnly<T>(url: string, fn: (sql: Sql, meta: StoreMeta) => Promise<T>): Promise<T> {
  const where = describeStoreUrl(url);
  const client = await connectedClient(url, where);
  try {
    const sql = sqlOver(client);
    await sql.exec('BEGIN READ ONLY');
    const found = await probeStore(sql, where);
    if (found === null) throw new NotARelayStoreError(`${where} is an empty database, not a relay store`);
    const value = await fn(sql, found);
    await sql.exec('COMMIT');
    return value;
  } finally {
    await client.end();
  }
}
