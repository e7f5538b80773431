// Schema 3: what a hosted relay (account tokens, design §8) must keep across restarts and
// restores: which cloud key each host key certified, and the revocation deny-list.
import type { Migration } from './migration.ts';

export const migration003: Migration = {
  version: 3,
  name: 'hosted relay: cloud keys and deny-list',
  up(db) {
    db.exec(`
      -- One certified cloud key per host key, and one host key per cloud key (RFC 7638 thumbprint).
      CREATE TABLE cloud_keys (
        host_pubkey TEXT PRIMARY KEY,
        jkt TEXT NOT NULL UNIQUE,
        bound_at INTEGER NOT NULL
      ) STRICT;
      -- Deny-list entries, one row per key: kind 'host_fp' (a host fingerprint) or 'client_id'.
      CREATE TABLE deny_list (
        kind TEXT NOT NULL CHECK (kind IN ('host_fp', 'client_id')),
        value TEXT NOT NULL,
        reason TEXT NOT NULL,
        until_ms INTEGER NOT NULL,
        added_at INTEGER NOT NULL,
        PRIMARY KEY (kind, value)
      ) STRICT;
      CREATE INDEX deny_list_until ON deny_list (until_ms);
    `);
  },
};
