// Hosts for the host tests: real homes in temp dirs, real stores, an injected clock, and the real
// LAN server on 127.0.0.1.
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { join } from 'node:path';
import { signEncAdV1 } from '../../src/protocol/records/enc-ad.ts';
import { initHome } from '../../src/host/core/identity.ts';
import type { HostNode } from '../../src/host/core/node.ts';
import { closeNode, openNode } from '../../src/host/open-node.ts';
import { createLanServer } from '../../src/host/transport/lan/server.ts';
import { tempDir } from '../helpers/processes.ts';
import type { TestClock } from '../helpers/clock.ts';

/** A new host named `name` in a fresh home, on `clock`. */
export function makeHost(name: string, clock: TestClock, agents: string[] = []): HostNode {
  const home = join(tempDir(`mbx-${name}-`), 'home');
  initHome(home, name, 0);
  const node = openNode(home, { nowMs: clock.nowMs });
  after(() => closeNode(node));
  for (const agent of agents) node.store.mail.addAgent(agent, null, clock.now);
  return node;
}

/** Serves `node`'s LAN endpoints on 127.0.0.1; returns the base URL. */
export async function serveLan(node: HostNode): Promise<string> {
  const server = createLanServer(node);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Pins `peer` on `node` as pairing would (keys, signed enc key, address). */
export function pin(node: HostNode, peer: HostNode, addr: string): void {
  node.store.peers.pin(
    {
      host: peer.config.host,
      host_pubkey: peer.keys.hostKey.publicKey,
      owner_pubkey: peer.keys.hostKey.publicKey,
      addr,
      enc_pub: peer.keys.enc.publicKey,
      enc_sig: signEncAdV1(peer.config.host, peer.keys.enc.publicKey, peer.keys.hostKey),
    },
    node.nowMs(),
  );
}

/** Two hosts, paired, each serving LAN on 127.0.0.1. */
export async function pairedHosts(clock: TestClock): Promise<{ a: HostNode; b: HostNode; aUrl: string; bUrl: string }> {
  const a = makeHost('alpha', clock, ['ann', 'al']);
  const b = makeHost('beta', clock, ['bob', 'bea']);
  const aUrl = await serveLan(a);
  const bUrl = await serveLan(b);
  pin(a, b, bUrl);
  pin(b, a, aUrl);
  return { a, b, aUrl, bUrl };
}
