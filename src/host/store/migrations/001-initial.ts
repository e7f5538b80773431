// Schema 1: the host's tables: meta, agents, paired peers and their retired keys, messages and
// their deliveries (the mailbox), the outbox, receipts of mail sent, pairing tokens and rotations.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration001: Migration = {
  version: 1,
  name: 'initial schema',
  up(db) {
    db.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

      CREATE TABLE agents (
        name TEXT PRIMARY KEY,
        role TEXT,
        created_at INTEGER NOT NULL
      );

      -- Paired hosts, pinned by key. enc_pub is the peer's X25519 key from a signed advertisement.
      CREATE TABLE peers (
        host TEXT PRIMARY KEY,
        host_pubkey TEXT NOT NULL UNIQUE,
        owner_pubkey TEXT,
        addr TEXT NOT NULL,
        enc_pub TEXT,
        enc_sig TEXT,
        paired_at INTEGER NOT NULL,
        last_ok_at INTEGER,
        last_error TEXT
      );

      -- Keys a peer used before a rotation: still valid to verify what it signed before.
      CREATE TABLE peer_retired_keys (
        pubkey TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        retired_at INTEGER NOT NULL
      );

      -- Every message this host knows: written here ('out') or received from a peer ('in').
      -- body is the opened text; wire is the sealed envelope exactly as received.
      CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        direction TEXT NOT NULL,
        from_addr TEXT NOT NULL,
        sender_host TEXT NOT NULL,
        to_json TEXT NOT NULL,
        thread TEXT NOT NULL,
        reply_to TEXT,
        kind TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        ts TEXT NOT NULL,
        wire TEXT,
        created_at INTEGER NOT NULL
      );

      -- One row per local recipient of a message: the mailbox. receipt_seq counts receipts sent.
      CREATE TABLE deliveries (
        msg_id TEXT NOT NULL REFERENCES messages(id),
        agent TEXT NOT NULL,
        state TEXT NOT NULL,
        note TEXT,
        receipt_seq INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (msg_id, agent)
      );
      CREATE INDEX deliveries_by_agent ON deliveries(agent, state);

      -- Everything waiting to leave for a peer: envelopes, receipts, rotation records. A transport
      -- takes due 'queued' rows and settles them; settled envelope rows stay as the send record.
      CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        msg_id TEXT,
        peer_host TEXT NOT NULL,
        wire TEXT NOT NULL,
        state TEXT NOT NULL,
        transport TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        settled_at INTEGER,
        last_error TEXT,
        UNIQUE (kind, item_id, peer_host)
      );
      CREATE INDEX outbox_due ON outbox(state, next_at);
      CREATE INDEX outbox_by_msg ON outbox(msg_id);

      -- The best delivery receipt per (message, recipient) for mail this host sent.
      CREATE TABLE receipts (
        msg_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        peer_host TEXT NOT NULL,
        state TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        note TEXT,
        wire TEXT NOT NULL,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (msg_id, recipient)
      );

      -- Pairing tokens: only the scrypt key of the token is kept.
      CREATE TABLE pair_tokens (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        token_key TEXT NOT NULL,
        state TEXT NOT NULL,
        failures INTEGER NOT NULL DEFAULT 0,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );

      -- Rotation records: our own ('own') and those of peers we applied ('peer').
      CREATE TABLE rotations (
        new_pub TEXT PRIMARY KEY,
        old_pub TEXT NOT NULL,
        host TEXT NOT NULL,
        origin TEXT NOT NULL,
        record TEXT NOT NULL,
        at INTEGER NOT NULL
      );
    `);
  },
};
