// Schema 7: the owner can dismiss a quarantined relay item: it stays in the store (with the time it
// was dismissed) but no longer counts in doctor.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration007: Migration = {
  version: 7,
  name: 'dismissed quarantine items',
  up(db) {
    db.exec('ALTER TABLE relay_quarantine ADD COLUMN dismissed_at INTEGER');
  },
};
