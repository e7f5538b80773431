// The daemon: the LAN server plus a tick (about every 2 s) that refreshes keys, fetches missing
// peer enc keys and flushes the outbox. A peer's verified call wakes the tick at once.
import { networkInterfaces } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { HostNode } from './node.ts';
import { flushOutbox } from './outbox.ts';
import { nameDiskError } from './store/disk-errors.ts';
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
/** While the disk holding the home refuses writes, the tick waits TICK_MS doubled per failed tick, up to this. */
export const DISK_BACKOFF_MAX_MS = 60_000;

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
  const tickMs = options.tickMs ?? TICK_MS;
  /** ticks failed in a row because of the disk (0: it takes writes); the tick backs off while it lasts */
  let diskFailures = 0;

  /** One line when the disk starts refusing writes (by a tick or a peer's call); ticks back off until one succeeds. */
  function noteDiskFault(named: string): void {
    if (diskFailures === 0) log(`${named}; the daemon retries, less often while it lasts (mail waits in the outbox)`);
    diskFailures += 1;
  }

  function noteTickDone(): void {
    if (diskFailures > 0) log(`the disk holding ${node.home} takes writes again`);
    diskFailures = 0;
  }

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
          noteTickDone();
        } catch (err) {
          const named = nameDiskError(err, node.home);
          if (named !== null) noteDiskFault(named);
          else log(`tick failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      } while (again && !stopped);
    })().finally(() => { running = null; });
    return running;
  }

  function schedule(): void {
    if (stopped) return;
    const delay = diskFailures === 0 ? tickMs : Math.min(tickMs * 2 ** diskFailures, DISK_BACKOFF_MAX_MS);
    timer = setTimeout(() => { void tick().then(schedule); }, delay);
  }

  // a peer's call wakes the tick, except while the disk refuses writes: then the backoff decides
  const server = createLanServer(node, {
    onPeerActive: () => { if (diskFailures === 0) void tick(); },
    onDiskFault: noteDiskFault,
  });
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
