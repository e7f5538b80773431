/** One numbered schema step of the PostgreSQL store: SQL run inside the upgrade transaction (no BEGIN/COMMIT). */
export interface PostgresMigration {
  version: number;
  /** a few words for the error message when it fails */
  name: string;
  sql: string;
}
