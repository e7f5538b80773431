// Schema 3 of the PostgreSQL store (the SQLite store's schema 7): beside a host's signed v2 enc-key
// ad, the signature of its legacy v1 ad naming the same key (protocol.md §3.8).
import type { PostgresMigration } from './migration.ts';

export const migration003: PostgresMigration = {
  version: 3,
  name: 'enc-key ads: the v1 signature beside a v2 ad',
  sql: 'ALTER TABLE enc_ads ADD COLUMN v1_sig text',
};
