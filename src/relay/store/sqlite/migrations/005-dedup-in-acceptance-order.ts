// Schema 5: fewer pages written per accepted item (issue 7). The dedup rows go back to a rowid table,
// now filled in acceptance order (the copy below sorts by accepted_at, and a push appends), with one
// unique index on (target_pubkey, item_id, sender_pubkey) for lookups. Appending to the table fills
// its pages one after the other, and the sweep walks the rows in rowid order (oldest first), so the
// accepted_at index is gone: about 1.3 KB less written per accepted 1 KiB item at 32 senders.
import type { Migration } from './migration.ts';

export const migration005: Migration = {
  version: 5,
  name: 'dedup in acceptance order, one key index',
  up(db) {
    db.exec(`
      CREATE TABLE dedup_in_order (
        target_pubkey TEXT NOT NULL,
        item_id TEXT NOT NULL,
        sender_pubkey TEXT NOT NULL,
        wire_hash TEXT NOT NULL,
        seq INTEGER NOT NULL,
        accepted_at INTEGER NOT NULL
      ) STRICT;
      INSERT INTO dedup_in_order (target_pubkey, item_id, sender_pubkey, wire_hash, seq, accepted_at)
        SELECT target_pubkey, item_id, sender_pubkey, wire_hash, seq, accepted_at FROM dedup
        ORDER BY accepted_at, target_pubkey, item_id, sender_pubkey;
      DROP TABLE dedup;
      ALTER TABLE dedup_in_order RENAME TO dedup;
      CREATE UNIQUE INDEX dedup_key ON dedup (target_pubkey, item_id, sender_pubkey);
    `);
  },
};
