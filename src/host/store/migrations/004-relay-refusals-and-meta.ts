// Schema 4: rows the relay refused for good, the relay's item size limit, relays that only take
// v1 enc-key ads, and each message's envelope meta.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration004: Migration = {
  version: 4,
  name: 'relay refusals, item size, v1-only ads, envelope meta',
  up(db) {
    db.exec(`
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
    `);
  },
};
