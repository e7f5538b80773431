// Shared fixtures for the relay store tests: keys, items, and a store on a fresh temporary dir.
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import { openSqliteRelayStore, RELAY_DB_FILE, type OpenSqliteRelayStoreOptions, type SqliteRelayStore } from '../../../src/relay/store/sqlite/index.ts';
import { tempDir } from '../../helpers/processes.ts';

export function newKey(): string {
  return generateSigningKey().publicKey;
}

export const RELAY_KEY = newKey();

export async function freshStore(options: Partial<OpenSqliteRelayStoreOptions> = {}): Promise<{ store: SqliteRelayStore; dir: string }> {
  const dir = options.dir ?? join(tempDir('agentmbx-store-'), 'store');
  const store = await openSqliteRelayStore({ relayPubkey: RELAY_KEY, ...options, dir });
  return { store, dir };
}

export { item } from './behaviour/harness.ts';

/** A second, read-only connection to the store file, for checking what is really on disk. */
export function inspect<T>(dir: string, fn: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(join(dir, RELAY_DB_FILE), { readOnly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
