// Schema 2 of the PostgreSQL store: what several relay processes share besides the queues (the
// SQLite store's schema 6): open enrolment challenges and the push-rate windows.
import type { PostgresMigration } from './migration.ts';

export const migration002: PostgresMigration = {
  version: 2,
  name: 'shared state: enrolment challenges and rate windows',
  sql: `
    -- one open challenge per host key; single use (taken by deleting it)
    CREATE TABLE challenges (
      pubkey text PRIMARY KEY,
      challenge text NOT NULL,
      expires_at bigint NOT NULL
    );
    CREATE INDEX challenges_expiry ON challenges (expires_at);
    -- fixed request windows per key ('push:' and the sender key)
    CREATE TABLE rate_windows (
      key text PRIMARY KEY,
      window_start bigint NOT NULL,
      count bigint NOT NULL
    );
    CREATE INDEX rate_windows_start ON rate_windows (window_start);
  `,
};
