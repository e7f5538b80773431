// Opening a host: its files checked, an interrupted rotation finished, its store opened. Apart from
// core/node.ts so that the host's base type does not load rotation (and what rotation loads).
import { checkPrivateFile } from './core/home-files.ts';
import { homePaths, loadKeys, readConfig } from './core/identity.ts';
import type { HostNode } from './core/node.ts';
import { finishPendingRotation } from './core/rotation.ts';
import { checkStoreFile, checkStoreOwner } from './store-guard.ts';
import { HostStore } from './store/host-store.ts';

export interface OpenNodeOptions {
  nowMs?: () => number;
}

/**
 * Opens the host in `home`: checks the files, opens the store (refused when it is missing, empty or
 * another host's: only init makes one), finishes an interrupted rotation.
 */
export function openNode(home: string, options: OpenNodeOptions = {}): HostNode {
  const config = readConfig(home);
  const storePath = homePaths(home).store;
  checkStoreFile(home);
  checkPrivateFile(storePath);
  const store = HostStore.open(storePath);
  try {
    checkStoreOwner(home, store);
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
