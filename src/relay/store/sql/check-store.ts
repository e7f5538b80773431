// The open-time check both SQL backends make of a store they found: a schema this binary knows and
// this relay's key. Errors name keys by fingerprint, never by their text.
import { fingerprint } from '../../../protocol/fingerprint.ts';
import { StoreKeyMismatchError, StoreSchemaTooNewError } from '../errors.ts';
import type { StoreMeta } from '../relay-store.ts';

export function checkStore(meta: StoreMeta, dir: string, binaryVersion: number, relayPubkey: string | undefined): void {
  if (meta.schemaVersion > binaryVersion) {
    throw new StoreSchemaTooNewError(`store schema ${meta.schemaVersion} is newer than this agentmbx (${binaryVersion}): upgrade agentmbx`);
  }
  if (relayPubkey !== undefined && meta.relayPubkey !== relayPubkey) {
    throw new StoreKeyMismatchError(
      `the relay store in ${dir} belongs to relay key ${describeKey(meta.relayPubkey)}, not to this relay's key ${describeKey(relayPubkey)}: ` +
        "start the relay with the store's own key, or use another store directory",
    );
  }
}

/** A key's fingerprint for a message; never the key text itself. */
function describeKey(publicKey: string): string {
  try {
    return fingerprint(publicKey);
  } catch {
    return '(not a valid key)';
  }
}
