// Schema 8: the owner can dismiss a quarantined relay item: it stays in the store (with the time it
// was dismissed) but no longer counts in doctor.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration008: Migration = {
  version: 8,
  name: 'dismissed quarantine items',
  up(db) {
    db.exec('ALTER TABLE relay_quarantine ADD COLUMN dismissed_at INTEGER');
  },
};
