// Schema 2: the pinned relay, this host's position in its queue, the quarantine of refused relay
// items, peers' v2 enc-key ads, and the relay's acceptance of outbox rows.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration002: Migration = {
  version: 2,
  name: 'the pinned relay',
  up(db) {
    db.exec(`
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
    `);
  },
};
