// One host's state in memory: its home, config, keys, store and clock. Every host operation
// (send, receive, receipts, pairing, rotation) takes this. Opening one is ../open-node.ts; this file
// imports no host logic, so every module may depend on it without a cycle.
import type { HostConfig, HostKeys } from './identity.ts';
import type { HostStore } from '../store/host-store.ts';

export interface HostNode {
  readonly home: string;
  readonly config: HostConfig;
  /** replaced by a key rotation */
  keys: HostKeys;
  readonly store: HostStore;
  readonly nowMs: () => number;
}

/** `name@thishost`. */
export function localAddress(node: HostNode, name: string): string {
  return `${name}@${node.config.host}`;
}

export { isoTime } from '../../common/time-text.ts';
