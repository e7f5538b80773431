// The host store's schema as numbered migrations. Migration N brings the schema from version N-1 to
// N; the version lives in PRAGMA user_version. Add a migration, never edit a shipped one.

export interface Migration {
  readonly version: number;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
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
    `,
  },
  {
    version: 2,
    sql: `
      -- The pinned relay (at most one). seen_pubkey is another key the relay presented: relay use
      -- stops until the owner confirms it. session is the enrolment cache key
      -- (url, relay_pubkey, epoch, host_pubkey); a different key means enrol again.
      CREATE TABLE relay (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        url TEXT NOT NULL,
        relay_pubkey TEXT NOT NULL,
        seen_pubkey TEXT,
        state TEXT NOT NULL,
        detail TEXT,
        epoch TEXT,
        epoch_changed_at INTEGER,
        retention_ms INTEGER,
        max_batch INTEGER,
        max_pull INTEGER,
        session TEXT,
        session_host_pubkey TEXT,
        enc_ad_at INTEGER,
        enc_ad_pub TEXT,
        senders_published TEXT,
        failures INTEGER NOT NULL DEFAULT 0,
        retry_at INTEGER NOT NULL DEFAULT 0,
        set_at INTEGER NOT NULL
      );

      -- How far this host durably processed each relay's queue, per epoch (a new epoch starts at 0).
      CREATE TABLE relay_position (
        relay_url TEXT NOT NULL,
        epoch TEXT NOT NULL,
        received_through INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (relay_url, epoch)
      );

      -- Relay items this host refused: kept with the reason and the exact wire (base64), never dropped.
      CREATE TABLE relay_quarantine (
        relay_url TEXT NOT NULL,
        epoch TEXT NOT NULL,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        sender_pubkey TEXT NOT NULL,
        reason TEXT NOT NULL,
        wire_b64 TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (relay_url, epoch, seq)
      );

      -- The newest v2 enc-key ad accepted per peer key: an older one naming another enc key is a rollback.
      CREATE TABLE relay_enc_ads (
        host_pubkey TEXT PRIMARY KEY,
        enc_pub TEXT NOT NULL,
        iat_ms INTEGER NOT NULL,
        record TEXT NOT NULL
      );

      -- Relay acceptance of an outbox row: the relay's seq and epoch, its signed accept, its time.
      ALTER TABLE outbox ADD COLUMN relay_seq INTEGER;
      ALTER TABLE outbox ADD COLUMN relay_epoch TEXT;
      ALTER TABLE outbox ADD COLUMN relay_accept TEXT;
      ALTER TABLE outbox ADD COLUMN relay_accepted_at INTEGER;
      -- When a LAN call to the peer last failed (its last known address is unreachable).
      ALTER TABLE peers ADD COLUMN lan_error_at INTEGER;
    `,
  },
  {
    version: 3,
    sql: `
      -- The shell command that prints an account token for a hosted relay (relay set --token-command);
      -- NULL: the relay enrols by host key alone. The token itself is never stored.
      ALTER TABLE relay ADD COLUMN token_command TEXT;
    `,
  },
  {
    version: 4,
    sql: `
      -- The relay refused this row for good (rejected:<reason>, not a quota or rate): it may still go
      -- over the LAN, never to the relay again; NULL: the relay never refused it.
      ALTER TABLE outbox ADD COLUMN relay_refused TEXT;
      -- The pinned relay's max_item_bytes from its info (NULL: not known yet; send assumes the default).
      ALTER TABLE relay ADD COLUMN max_item_bytes INTEGER;
      -- 1: this relay predates signed v2 enc-key ads (it answered 404 to one) and took the v1 ad, so
      -- refreshes post v1 straight away; reset on a relay change or a new epoch (it may be upgraded).
      ALTER TABLE relay ADD COLUMN enc_ad_v1_only INTEGER NOT NULL DEFAULT 0;
      -- The envelope's meta as JSON (read --json shows it). Mail received before this migration has
      -- it in its stored wire; mail sent before it carried an empty meta, so it stays NULL.
      ALTER TABLE messages ADD COLUMN meta_json TEXT;
      UPDATE messages SET meta_json = json_extract(wire, '$.meta') WHERE wire IS NOT NULL AND json_valid(wire);
    `,
  },
  {
    version: 5,
    sql: `
      -- Full-text search over the subjects and bodies of stored mail. The index reads its text from
      -- messages (external content) and is kept by triggers, so it commits in the same transaction
      -- as the mail it indexes.
      CREATE VIRTUAL TABLE messages_fts USING fts5(subject, body, content = 'messages', content_rowid = 'rowid');
      CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, subject, body) VALUES (new.rowid, new.subject, new.body);
      END;
      CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, subject, body) VALUES ('delete', old.rowid, old.subject, old.body);
      END;
      INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
      CREATE INDEX messages_by_thread ON messages(thread, id);

      -- A send an agent asked for with an idempotency key: the same key from the same agent answers
      -- this message id instead of sending again.
      CREATE TABLE send_keys (
        agent TEXT NOT NULL,
        key TEXT NOT NULL,
        msg_id TEXT NOT NULL REFERENCES messages(id),
        created_at INTEGER NOT NULL,
        PRIMARY KEY (agent, key)
      );

      -- What an agent says it does, shown in the directory.
      ALTER TABLE agents ADD COLUMN description TEXT;

      -- When a LAN delivery attempt to the peer started, until it ends (NULL: none open). One still
      -- set when a daemon starts was cut short by a crash, and counts as a LAN failure.
      ALTER TABLE peers ADD COLUMN lan_attempt_at INTEGER;
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.length;
