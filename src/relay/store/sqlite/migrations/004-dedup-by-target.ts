// Schema 4: fewer pages written per accepted item (issue 7). The dedup rows become a WITHOUT ROWID
// table keyed by (target_pubkey, item_id, sender_pubkey): the key itself is the table, so a push
// writes two B-trees (the key and accepted_at for the sweep) instead of four; rows of one target sit
// together in ULID (time) order, so a commit group's rows land on the same few pages; and rotation
// finds a target's rows by the key's prefix without an index of its own.
import type { Migration } from './migration.ts';

export const migration004: Migration = {
  version: 4,
  name: 'dedup keyed by (target, item_id, sender), without rowid',
  up(db) {
    db.exec(`
      CREATE TABLE dedup_by_target (
        target_pubkey TEXT NOT NULL,
        item_id TEXT NOT NULL,
        sender_pubkey TEXT NOT NULL,
        wire_hash TEXT NOT NULL,
        seq INTEGER NOT NULL,
        accepted_at INTEGER NOT NULL,
        PRIMARY KEY (target_pubkey, item_id, sender_pubkey)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO dedup_by_target (target_pubkey, item_id, sender_pubkey, wire_hash, seq, accepted_at)
        SELECT target_pubkey, item_id, sender_pubkey, wire_hash, seq, accepted_at FROM dedup;
      DROP TABLE dedup;
      ALTER TABLE dedup_by_target RENAME TO dedup;
      CREATE INDEX dedup_accepted ON dedup (accepted_at);
    `);
  },
};
