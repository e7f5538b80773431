// The SQLite backend of RelayStore (design §2): open a store, read its meta, the schema it writes.
// Only src/relay/store/ (open-relay-store.ts) and tests import it.
export { openSqliteRelayStore, readStoreMeta, RELAY_DB_FILE, type OpenSqliteRelayStoreOptions } from './open-store.ts';
export { SqliteRelayStore } from './sqlite-relay-store.ts';
export { MAX_QUEUED_TRANSACTIONS } from '../sql/group-runner.ts';
export type { GroupScheduler } from './group-commit.ts';
export { MIGRATIONS, SCHEMA_VERSION, type Migration } from './migrations/index.ts';
