// The one way to open a relay store, and the one module above the backends that names them: the
// store setting (`--store`, MBX_RELAY_STORE) picks the backend, as simplexmq's newEnv picks its
// store by type: a `postgres://` (or `postgresql://`) URL is a PostgreSQL store, anything else a
// SQLite store directory.
import type { GroupCommitPolicy } from './group-commit-policy.ts';
import { StoreOpenError, type StoreDiskError, type StoreLockLostError } from './errors.ts';
import type { Ticker } from '../../common/ticker.ts';
import type { OpsLogEntry, RelayStore, StoredOpsLogEntry, StoreMeta } from './relay-store.ts';
import type { PostgresItemWakes, PostgresItemWakesOptions } from './postgres/item-wakes.ts';
import { openSqliteRelayStore, readStoreMeta } from './sqlite/index.ts';
import { appendOpsLogToStore, readOpsLogOfStore } from './sqlite/store-files.ts';
import { describeStoreUrl } from './store-url.ts';

// The PostgreSQL backend (and `pg`) is loaded only for a postgres:// store: a SQLite relay's
// processes do not keep it in memory (docs/relay-operator.md "Memory")
const postgresBackend = () => import('./postgres/open-store.ts');

export type StoreBackend = 'sqlite' | 'postgres';

/** Which backend a store setting names; refuses one no backend takes. */
export function storeBackendOf(location: string): StoreBackend {
  if (/^postgres(ql)?:\/\//i.test(location)) return 'postgres';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) {
    throw new StoreOpenError(
      `the relay store ${describeStoreUrl(location)} is not a kind this agentmbx opens: give a directory for a SQLite store, or a postgres:// URL`,
    );
  }
  return 'sqlite';
}

export interface OpenRelayStoreOptions {
  /** the store setting: a directory (SQLite) or a postgres:// URL */
  location: string;
  /** base64 public key of the relay running this store (a store of another key is refused) */
  relayPubkey: string;
  /** clock for the store's created_at (default Date.now) */
  nowMs?: () => number;
  /** the epoch of a new store (default randomEpoch) */
  newEpoch?: () => string;
  groupCommit?: GroupCommitPolicy;
  /** told after every durable commit of a write group: how many transactions it held, how long it took */
  onGroupCommit?: (size: number, latencyMs: number) => void;
  /** whether requests that will write are still being identified (a group may linger for them) */
  writersPending?: () => boolean;
  /** told once each time the disk's state changes: the fault that now refuses writes, or null when writes are durable again */
  onDiskState?: (fault: StoreDiskError | null) => void;
  /** told for every transaction refused because of the disk (for a metric) */
  onDiskRefusal?: (fault: StoreDiskError) => void;
  /**
   * an offline operation (rotate-epoch): on PostgreSQL the store lock is taken exclusively, so it is
   * refused while any relay process serves the store (SQLite's offline operations hold the writer lock file)
   */
  exclusive?: boolean;
  /** other relay processes write to this store too (`relay serve --workers N`); a backend that always shares (a database server) ignores it */
  sharedWriters?: boolean;
  /**
   * PostgreSQL: the epoch the process serves (null before it has read one). A store lock lost and
   * taken again must find this epoch still stored, or the store keeps refusing (postgres/store-lock.ts)
   */
  servedEpoch?: () => string | null;
  /** PostgreSQL: told when the store lock is lost (its connection ended; requests are refused) and when it is held again (null) */
  onLockState?: (lost: StoreLockLostError | null) => void;
  /** PostgreSQL: runs the store lock's periodic check (default every STORE_LOCK_CHECK_INTERVAL_MS; tests fire it by hand) */
  lockCheckTicker?: Ticker;
}

/** Opens (creating or upgrading) the store the setting names. */
export async function openRelayStore(options: OpenRelayStoreOptions): Promise<RelayStore> {
  const { location, exclusive, ...rest } = options;
  switch (storeBackendOf(location)) {
    case 'sqlite':
      return openSqliteRelayStore({ ...rest, dir: location });
    case 'postgres':
      return (await postgresBackend()).openPostgresRelayStore({
        url: location,
        relayPubkey: rest.relayPubkey,
        exclusive: exclusive === true,
        ...(rest.groupCommit ? { groupCommit: rest.groupCommit } : {}),
        ...(rest.onGroupCommit ? { onGroupCommit: rest.onGroupCommit } : {}),
        ...(rest.nowMs ? { nowMs: rest.nowMs } : {}),
        ...(rest.newEpoch ? { newEpoch: rest.newEpoch } : {}),
        ...(rest.servedEpoch ? { servedEpoch: rest.servedEpoch } : {}),
        ...(rest.onLockState ? { onLockState: rest.onLockState } : {}),
        ...(rest.lockCheckTicker ? { lockCheckTicker: rest.lockCheckTicker } : {}),
      });
  }
}

/**
 * The meta of the store the setting names, without opening it for writing (safe while a relay
 * serves it). Throws NotARelayStoreError, StoreSchemaTooNewError, or StoreKeyMismatchError when
 * `relayPubkey` is given and differs.
 */
export async function readRelayStoreMeta(location: string, options: { relayPubkey?: string } = {}): Promise<StoreMeta> {
  switch (storeBackendOf(location)) {
    case 'sqlite':
      return readStoreMeta(location, options);
    case 'postgres':
      return (await postgresBackend()).readPostgresStoreMeta(location, options);
  }
}

/** The newest `limit` entries of the operations log, read without opening the store for writing (safe while a relay serves it). */
export async function readRelayStoreOpsLog(location: string, limit: number): Promise<StoredOpsLogEntry[]> {
  switch (storeBackendOf(location)) {
    case 'sqlite':
      return readOpsLogOfStore(location, limit);
    case 'postgres':
      return (await postgresBackend()).readPostgresOpsLog(location, limit);
  }
}

/** Appends one entry to the operations log of a SQLite store from outside the serving relay (a backup records itself). */
export function appendRelayStoreOpsLog(location: string, entry: OpsLogEntry): void {
  switch (storeBackendOf(location)) {
    case 'sqlite':
      appendOpsLogToStore(location, entry);
      return;
    case 'postgres':
      throw new StoreOpenError('relay backup works on a SQLite store: back a PostgreSQL store up with pg_dump (docs/postgres.md)');
  }
}

/**
 * A store shared by relay processes on a database server (PostgreSQL): the channel that tells them
 * all which target keys got items (held pulls, store/postgres/item-wakes.ts). null for SQLite: its
 * processes are one group, told through their primary.
 */
export async function listenForStoreItemWakes(location: string, options: Omit<PostgresItemWakesOptions, 'url'>): Promise<PostgresItemWakes | null> {
  if (storeBackendOf(location) !== 'postgres') return null;
  return (await import('./postgres/item-wakes.ts')).listenForItemWakes({ url: location, ...options });
}
