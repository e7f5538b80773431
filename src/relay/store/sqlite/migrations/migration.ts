import type { DatabaseSync } from 'node:sqlite';

/** One numbered schema step. `up` runs inside the upgrade transaction; it must not BEGIN/COMMIT. */
export interface Migration {
  version: number;
  /** a few words for the error message when it fails */
  name: string;
  up(db: DatabaseSync): void;
}
