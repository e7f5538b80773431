// Schema 6: what several relay processes on one store share (`relay serve --workers N`): open
// enrolment challenges and the push-rate windows, which a lone relay kept in memory.
import type { Migration } from './migration.ts';

export const migration006: Migration = {
  version: 6,
  name: 'shared state: enrolment challenges and rate windows',
  up(db) {
    db.exec(`
      -- One open challenge per host key; single use (taken by deleting it).
      CREATE TABLE challenges (
        pubkey TEXT PRIMARY KEY,
        challenge TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX challenges_expiry ON challenges (expires_at);
      -- Fixed one-minute request windows per key ('push:' and the sender key).
      CREATE TABLE rate_windows (
        key TEXT PRIMARY KEY,
        window_start INTEGER NOT NULL,
        count INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX rate_windows_start ON rate_windows (window_start);
    `);
  },
};
