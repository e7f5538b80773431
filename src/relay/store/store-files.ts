// Backup and restore of a SQLite store work on its files (online backup, integrity check, the
// restore's carry-forward); these are the SQLite backend's file operations, named here so that
// ops/ never reaches into sqlite/. Another backend brings its own tooling (a PostgreSQL store:
// pg_dump and pg_restore), switched on storeBackendOf in ops/backup.ts and ops/restore.ts.
export {
  carryForward,
  checkIntegrity,
  describeStoreFile,
  makeStandalone,
  onlineBackup,
  settleWal,
  type CarriedForward,
  type StoreCounts,
} from './sqlite/store-files.ts';
export { RELAY_DB_FILE } from './sqlite/open-store.ts';
