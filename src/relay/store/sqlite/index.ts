// The SQLite backend of RelayStore (design §2): open a store, read its meta, the schema it writes.
export { openSqliteRelayStore, readStoreMeta, randomEpoch, RELAY_DB_FILE, BUSY_TIMEOUT_MS, type OpenSqliteRelayStoreOptions } from './open-store.ts';
export { SqliteRelayStore, MAX_QUEUED_TRANSACTIONS, STATEMENT_CACHE_SIZE, type SqliteRelayStoreOptions, type GroupCommitStats } from './sqlite-relay-store.ts';
export { DEFAULT_GROUP_COMMIT, MAX_GROUP_COMMIT_ITEMS, MAX_GROUP_COMMIT_WAIT_MS, type GroupCommitPolicy, type GroupScheduler } from './group-commit.ts';
export { MIGRATIONS, SCHEMA_VERSION, type Migration } from './migrations/index.ts';
export {
  StoreOpenError, NotARelayStoreError, StoreKeyMismatchError, StoreSchemaTooNewError, StoreMigrationError,
  StoreClosedError, StoreOverloadedError, TransactionMisuseError, StoreDiskError, type StoreDiskFault,
} from '../errors.ts';
