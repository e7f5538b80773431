// Schema 2: the operations log (restores, epoch rotations, backups), kept in the store so that it
// travels with the data it describes and `agentmbx relay log` can read it while the relay serves.
import type { Migration } from './migration.ts';

export const migration002: Migration = {
  version: 2,
  name: 'operations log',
  up(db) {
    db.exec(`
      CREATE TABLE ops_log (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL  -- JSON object
      ) STRICT;
    `);
  },
};
