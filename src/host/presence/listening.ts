// Where this host's daemon listens, for the LAN calls it makes (their `x-mbx-port` header) and its
// presence beacons. Set by the daemon once its server listens; a CLI command (no daemon) has none.
import type { HostNode } from '../core/node.ts';

export interface Listening {
  port: number;
  /** the address the server is bound to (0.0.0.0 or :: for every interface) */
  bind: string;
}

const listening = new WeakMap<HostNode, Listening>();

export function setListening(node: HostNode, where: Listening): void {
  listening.set(node, where);
}

export function listeningOf(node: HostNode): Listening | undefined {
  return listening.get(node);
}
