// The daemon: the LAN server plus a tick (about every 2 s) that refreshes keys, fetches missing
// peer enc keys and flushes the outbox. A peer's verified call wakes the tick at once.
import { networkInterfaces } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { HostNode } from './node.ts';
import { flushOutbox } from './outbox.ts';
import { refreshKeys } from './rotation.ts';
import { fetchPeerEncKey, LanTransport } from './transport/lan/client.ts';
import { RelayLink } from './transport/relay/relay-link.ts';
import { createLanServer } from './transport/lan/server.ts';
import type { Transport } from './transport/transport.ts';

export const TICK_MS = 2_000;
/** How often the daemon retries fetching a peer's missing enc key. */
export const ENC_KEY_RETRY_MS = 30_000;
/** Meta key: the URL this host's daemon listens on (what `join` tells the other side by default). */
export const META_LISTEN_ADDR = 'listen_addr';

export interface DaemonOptions {
  port: number;
  bind: string;
  tickMs?: number;
  log?: (line: string) => void;
}

export interface RunningDaemon {
  url: string;
  /** runs one tick now (tests, and wake-ups) */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

/** The first non-internal IPv4 address, for a daemon listening on every interface. */
export function lanAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) if (info.family === 'IPv4' && !info.internal) return info.address;
  }
  return '127.0.0.1';
}

export async function startDaemon(node: HostNode, options: DaemonOptions): Promise<RunningDaemon> {
  const log = options.log ?? (() => {});
  const transport: Transport = new LanTransport(node);
  const relay = new RelayLink(node, log);
  const encTried = new Map<string, number>();
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;

  async function fetchMissingEncKeys(): Promise<void> {
    const now = node.nowMs();
    for (const peer of node.store.peers.list()) {
      if (peer.enc_pub !== null) continue;
      if (now - (encTried.get(peer.host) ?? -Infinity) < ENC_KEY_RETRY_MS) continue;
      encTried.set(peer.host, now);
      try {
        await fetchPeerEncKey(node, peer);
        log(`fetched the enc key of ${peer.host}`);
      } catch (err) {
        node.store.peers.noteError(peer.host, err instanceof Error ? err.message : String(err));
        try {
          if (await relay.fetchEncKey(peer) !== null) log(`fetched the enc key of ${peer.host} through the relay`);
        } catch (relayErr) {
          log(relayErr instanceof Error ? relayErr.message : String(relayErr));
        }
      }
    }
    // Bounded by the peers table: forget hosts that are no longer peers.
    for (const host of encTried.keys()) if (node.store.peers.get(host) === undefined) encTried.delete(host);
  }

  async function tickOnce(): Promise<void> {
    refreshKeys(node);
    const choose = await relay.pass(transport);
    await fetchMissingEncKeys();
    await flushOutbox(node, choose, (row, result) => {
      if (result.outcome !== 'failed' || row.attempts === 0) log(`${row.kind} ${row.item_id} -> ${row.peer_host}: ${result.detail}`);
    });
  }

  function tick(): Promise<void> {
    if (running !== null) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await tickOnce();
        } catch (err) {
          log(`tick failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      } while (again && !stopped);
    })().finally(() => { running = null; });
    return running;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => { void tick().then(schedule); }, options.tickMs ?? TICK_MS);
  }

  const server = createLanServer(node, { onPeerActive: () => { void tick(); } });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.bind, () => { server.off('error', reject); resolve(); });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = options.bind === '0.0.0.0' || options.bind === '::' ? lanAddress() : options.bind;
  const url = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${port}`;
  node.store.setMeta(META_LISTEN_ADDR, url);
  void tick().then(schedule);

  return {
    url,
    tick,
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
      if (running !== null) await running;
    },
  };
}
