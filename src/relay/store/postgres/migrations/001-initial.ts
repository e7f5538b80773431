// Schema 1 of the PostgreSQL store: the tables of the SQLite store at its schema 5 (design §2, §7),
// in PostgreSQL's types. Times and seqs are bigint Unix milliseconds; wire bytes are bytea.
// Differences, each for a reason: dedup rows carry an identity `id` (the SQLite rowid: acceptance
// order for the sweep); sender lists are a text[] (rotation rewrites keys inside them in SQL).
import type { PostgresMigration } from './migration.ts';

export const migration001: PostgresMigration = {
  version: 1,
  name: 'initial schema',
  sql: `
    CREATE TABLE meta (
      key text PRIMARY KEY,
      value text NOT NULL
    );

    CREATE TABLE enrolments (
      host_pubkey text PRIMARY KEY,
      host_name text NOT NULL,
      owner_fp text NOT NULL,
      account text,
      org text,
      authorized_by text NOT NULL,
      enrolled_at bigint NOT NULL,
      revoked_at bigint
    );
    CREATE INDEX enrolments_live_name ON enrolments (lower(host_name)) WHERE revoked_at IS NULL;
    -- design §2: a name is unique among the live keys of one proven account
    CREATE UNIQUE INDEX enrolments_live_account_name ON enrolments (account, lower(host_name))
      WHERE revoked_at IS NULL AND account IS NOT NULL;

    CREATE TABLE enc_ads (
      host_pubkey text PRIMARY KEY,
      enc_pub text NOT NULL,
      version integer NOT NULL CHECK (version IN (1, 2)),
      record text,
      sig text NOT NULL,
      iat bigint NOT NULL,
      exp bigint,
      at bigint NOT NULL
    );

    CREATE TABLE sender_lists (
      target_pubkey text PRIMARY KEY,
      senders text[] NOT NULL,
      iat bigint NOT NULL,
      record text NOT NULL,
      sig text NOT NULL
    );

    CREATE TABLE items (
      target_pubkey text NOT NULL,
      seq bigint NOT NULL,
      kind text NOT NULL CHECK (kind IN ('envelope', 'receipt', 'expired')),
      item_id text NOT NULL,
      sender_pubkey text NOT NULL,
      wire bytea NOT NULL,
      wire_hash text NOT NULL,
      bytes integer NOT NULL,
      accepted_at bigint NOT NULL,
      expires_at bigint NOT NULL,
      account text,
      PRIMARY KEY (target_pubkey, seq)
    );
    CREATE INDEX items_expiry ON items (expires_at);

    CREATE TABLE dedup (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      target_pubkey text NOT NULL,
      item_id text NOT NULL,
      sender_pubkey text NOT NULL,
      wire_hash text NOT NULL,
      seq bigint NOT NULL,
      accepted_at bigint NOT NULL,
      UNIQUE (target_pubkey, item_id, sender_pubkey)
    );

    -- one row per target; a writer holds its row lock from seq allocation to commit (see items.ts)
    CREATE TABLE seqs (
      target_pubkey text PRIMARY KEY,
      next_seq bigint NOT NULL
    );

    CREATE TABLE acked (
      target_pubkey text PRIMARY KEY,
      acked_through bigint NOT NULL
    );

    -- usage counters, kept exact by every statement that adds, removes or moves items; a row whose
    -- items reach 0 is deleted
    CREATE TABLE queue_usage (
      target_pubkey text PRIMARY KEY,
      items bigint NOT NULL,
      bytes bigint NOT NULL
    );
    CREATE TABLE sender_usage (
      sender_pubkey text NOT NULL,
      target_pubkey text NOT NULL,
      items bigint NOT NULL,
      bytes bigint NOT NULL,
      PRIMARY KEY (sender_pubkey, target_pubkey)
    );
    CREATE TABLE account_usage (
      account text PRIMARY KEY,
      items bigint NOT NULL,
      bytes bigint NOT NULL
    );

    CREATE TABLE counters (
      name text PRIMARY KEY,
      value bigint NOT NULL
    );
    INSERT INTO counters (name, value) VALUES ('live_enrolments', 0);

    CREATE TABLE ops_log (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      at bigint NOT NULL,
      kind text NOT NULL,
      detail text NOT NULL
    );

    CREATE TABLE cloud_keys (
      host_pubkey text PRIMARY KEY,
      jkt text NOT NULL UNIQUE,
      bound_at bigint NOT NULL
    );
    CREATE TABLE deny_list (
      kind text NOT NULL CHECK (kind IN ('host_fp', 'client_id')),
      value text NOT NULL,
      reason text NOT NULL,
      until_ms bigint NOT NULL,
      added_at bigint NOT NULL,
      PRIMARY KEY (kind, value)
    );
    CREATE INDEX deny_list_until ON deny_list (until_ms);
  `,
};
