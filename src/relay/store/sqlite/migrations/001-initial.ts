// Schema 1: the tables of design §2, plus the usage counters that let quota checks (design §7) read one
// row instead of scanning a queue. Every table is STRICT so a wrong type fails loudly.
import type { Migration } from './migration.ts';

export const migration001: Migration = {
  version: 1,
  name: 'initial schema',
  up(db) {
    db.exec(`
      CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) STRICT;

      CREATE TABLE enrolments (
        host_pubkey TEXT PRIMARY KEY,
        host_name TEXT NOT NULL,
        owner_fp TEXT NOT NULL,
        account TEXT,
        org TEXT,
        authorized_by TEXT NOT NULL,
        enrolled_at INTEGER NOT NULL,
        revoked_at INTEGER
      ) STRICT;
      CREATE INDEX enrolments_live_name ON enrolments (lower(host_name)) WHERE revoked_at IS NULL;
      -- design §2: a name is unique among the live keys of one proven account
      CREATE UNIQUE INDEX enrolments_live_account_name ON enrolments (account, lower(host_name))
        WHERE revoked_at IS NULL AND account IS NOT NULL;

      CREATE TABLE enc_ads (
        host_pubkey TEXT PRIMARY KEY,
        enc_pub TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version IN (1, 2)),
        record TEXT,
        sig TEXT NOT NULL,
        iat INTEGER NOT NULL,
        exp INTEGER,
        at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE sender_lists (
        target_pubkey TEXT PRIMARY KEY,
        senders TEXT NOT NULL,  -- JSON array of sender keys
        iat INTEGER NOT NULL,
        record TEXT NOT NULL,
        sig TEXT NOT NULL
      ) STRICT;

      CREATE TABLE items (
        target_pubkey TEXT NOT NULL,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('envelope', 'receipt', 'expired')),
        item_id TEXT NOT NULL,
        sender_pubkey TEXT NOT NULL,
        wire BLOB NOT NULL,
        wire_hash TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        accepted_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        account TEXT,  -- the account charged for the item (usage), or NULL
        PRIMARY KEY (target_pubkey, seq)
      ) STRICT;
      CREATE INDEX items_expiry ON items (expires_at);

      CREATE TABLE dedup (
        sender_pubkey TEXT NOT NULL,
        item_id TEXT NOT NULL,
        target_pubkey TEXT NOT NULL,
        wire_hash TEXT NOT NULL,
        seq INTEGER NOT NULL,
        accepted_at INTEGER NOT NULL,
        PRIMARY KEY (sender_pubkey, item_id, target_pubkey)
      ) STRICT;
      CREATE INDEX dedup_accepted ON dedup (accepted_at);
      -- rotation moves a target's rows, following each item by its seq
      CREATE INDEX dedup_target_seq ON dedup (target_pubkey, seq);

      CREATE TABLE seqs (
        target_pubkey TEXT PRIMARY KEY,
        next_seq INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE acked (
        target_pubkey TEXT PRIMARY KEY,
        acked_through INTEGER NOT NULL
      ) STRICT;

      -- Usage counters, kept exact by every statement that adds, removes or moves items. A row
      -- whose items reach 0 is deleted.
      CREATE TABLE queue_usage (
        target_pubkey TEXT PRIMARY KEY,
        items INTEGER NOT NULL,
        bytes INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE sender_usage (
        sender_pubkey TEXT NOT NULL,
        target_pubkey TEXT NOT NULL,
        items INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        PRIMARY KEY (sender_pubkey, target_pubkey)
      ) STRICT;
      CREATE TABLE account_usage (
        account TEXT PRIMARY KEY,
        items INTEGER NOT NULL,
        bytes INTEGER NOT NULL
      ) STRICT;

      -- Named whole-store counters (live_enrolments).
      CREATE TABLE counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      ) STRICT;
      INSERT INTO counters (name, value) VALUES ('live_enrolments', 0);
    `);
  },
};
