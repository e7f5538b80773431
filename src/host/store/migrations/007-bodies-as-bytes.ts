// Schema 7: message bodies are kept as their UTF-8 bytes (a BLOB). node:sqlite hands a TEXT value
// back only up to its first U+0000, so a body holding one read back cut short; the bytes were stored
// whole, and this turns every existing body into the same bytes as a BLOB. The full-text index sees
// the same bytes either way, so it stays as it is.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration007: Migration = {
  version: 7,
  name: 'message bodies as bytes',
  up(db) {
    db.exec(`UPDATE messages SET body = CAST(body AS BLOB) WHERE typeof(body) = 'text'`);
  },
};
