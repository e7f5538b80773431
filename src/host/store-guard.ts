// Only `init` makes a store. Every other opening of a home checks that its host.db is there, is not
// empty, and belongs to this home's host key (current or retired): a lost or swapped store is
// refused with what is missing and how to restore it, never mistaken for a new host.
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fingerprint } from '../protocol/fingerprint.ts';
import { homePaths, loadSigningKey } from './core/identity.ts';
import { StoreError } from './store/database.ts';
import { META_HOST_PUB, type HostStore } from './store/host-store.ts';

/** How a person gets a lost store back. */
export const RESTORE_HINT =
  'restore it from a backup with agentmbx restore FILE (docs/host.md, "Backup and restore"); agentmbx never starts a new store over an existing host';

/** The refusal of a home whose store is missing, empty or another host's: exit 6. */
export class StoreMissingError extends StoreError {}

/** Refuses a store file that is missing or empty, before SQLite could make a new one in its place. */
export function checkStoreFile(home: string): void {
  const path = homePaths(home).store;
  let size: number;
  try {
    size = lstatSync(path).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new StoreMissingError(`${path} is missing: this home has its keys and config.json but not its store (mail, peers, outbox); ${RESTORE_HINT}`);
  }
  if (size === 0)
    throw new StoreMissingError(`${path} is empty: this home has its keys and config.json but its store (mail, peers, outbox) is gone; ${RESTORE_HINT}`);
}

/** The host public keys this home has held: the current one and every retired one. */
export function homeHostKeys(home: string): Set<string> {
  const paths = homePaths(home);
  const keys = new Set([loadSigningKey(paths.hostKey).publicKey]);
  let names: string[] = [];
  try {
    names = readdirSync(paths.retiredDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  for (const name of names.filter((n) => n.startsWith('host-') && n.endsWith('.key'))) keys.add(loadSigningKey(join(paths.retiredDir, name)).publicKey);
  return keys;
}

/** Refuses a store that holds no host, or another host's (its host key is none this home has held). */
export function checkStoreOwner(home: string, store: HostStore): void {
  const path = homePaths(home).store;
  const owner = store.getMeta(META_HOST_PUB);
  if (owner === undefined) throw new StoreMissingError(`${path} holds no host: it is not the store of this home; ${RESTORE_HINT}`);
  const mine = homeHostKeys(home);
  if (!mine.has(owner)) {
    const current = [...mine][0] ?? '';
    throw new StoreMissingError(
      `${path} is another host's store (host key ${fingerprint(owner)}, this home's is ${fingerprint(current)}): put this host's own host.db back, or ${RESTORE_HINT}`,
    );
  }
}
