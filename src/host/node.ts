// One host's state in memory: its home, config, keys, store and clock. Every host operation
// (send, receive, receipts, pairing, rotation) takes this.
import { closeSync, openSync } from 'node:fs';
import { checkPrivateFile } from './home-files.ts';
import { HostStore } from './store/host-store.ts';
import { homePaths, loadKeys, readConfig, type HostConfig, type HostKeys } from './identity.ts';
import { finishPendingRotation } from './rotation.ts';

export interface HostNode {
  readonly home: string;
  readonly config: HostConfig;
  /** replaced by a key rotation */
  keys: HostKeys;
  readonly store: HostStore;
  readonly nowMs: () => number;
}

export interface OpenNodeOptions {
  nowMs?: () => number;
}

/** Opens the host in `home`: checks the files, finishes an interrupted rotation, opens the store. */
export function openNode(home: string, options: OpenNodeOptions = {}): HostNode {
  const config = readConfig(home);
  const storePath = homePaths(home).store;
  // The store holds opened mail: private like the keys (SQLite gives its -wal/-shm files the same mode).
  if (!checkPrivateFile(storePath)) closeSync(openSync(storePath, 'a', 0o600));
  const store = HostStore.open(storePath);
  try {
    const nowMs = options.nowMs ?? Date.now;
    finishPendingRotation(home, store, nowMs());
    return { home, config, keys: loadKeys(home), store, nowMs };
  } catch (err) {
    store.close();
    throw err;
  }
}

export function closeNode(node: HostNode): void {
  node.store.close();
}

/** `name@thishost`. */
export function localAddress(node: HostNode, name: string): string {
  return `${name}@${node.config.host}`;
}

export { isoTime } from '../common/time-text.ts';
