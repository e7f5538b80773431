// The daemon: the LAN server plus a tick (about every 2 s, daemon-tick.ts) that pulls from the relay
// and, apart from that, refreshes keys, fetches missing peer enc keys and flushes the outbox, each
// peer and transport in its own lane. A peer's verified call wakes the tick at once. A relay that
// holds pulls gets one held pull at a time instead of the tick's (relay-link.ts). A local `send`
// wakes the tick through a unix socket in the home (daemon-wake.ts).
import { lanAddress } from '../common/lan-address.ts';
import type { AddressInfo } from 'node:net';
import type { HostNode } from './core/node.ts';
import { DaemonTick } from './daemon-tick.ts';
import { setListening } from './presence/listening.ts';
import { createLanServer } from './transport/lan/server.ts';
import { listenForWakes } from './daemon-wake.ts';
import { META_LISTEN_ADDR } from './store/host-store.ts';

export const TICK_MS = 2_000;
/** Meta key: the URL this host's daemon listens on (what `join` tells the other side by default). */
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

export async function startDaemon(node: HostNode, options: DaemonOptions): Promise<RunningDaemon> {
  const log = options.log ?? (() => {});
  const work = new DaemonTick(node, { log });
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const tickMs = options.tickMs ?? TICK_MS;
  const tick = (): Promise<void> => work.tick();

  // Ticks go on every tickMs whatever the last one still waits for (the jobs fold overlapping calls);
  // while the disk refuses writes, the tick backs off.
  function schedule(): void {
    if (stopped) return;
    const delay = work.diskFailures === 0 ? tickMs : Math.min(tickMs * 2 ** work.diskFailures, DISK_BACKOFF_MAX_MS);
    timer = setTimeout(() => {
      void tick();
      schedule();
    }, delay);
  }

  const interrupted = node.store.peers.failInterruptedAttempts();
  if (interrupted.length > 0) log(`LAN attempts cut short by the last stop count as failed: ${interrupted.join(', ')}`);
  // a peer's call wakes the tick, except while the disk refuses writes: then the backoff decides
  const server = createLanServer(node, {
    onPeerActive: () => {
      if (work.diskFailures === 0) void tick();
    },
    onDiskFault: (named) => work.noteDiskFault(named),
    log,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  setListening(node, { port, bind: options.bind });
  const shownHost = options.bind === '0.0.0.0' || options.bind === '::' ? lanAddress() : options.bind;
  const url = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${port}`;
  node.store.setMeta(META_LISTEN_ADDR, url);
  // a local `send` wakes the tick at once (daemon-wake.ts), the disk's backoff permitting
  const wakes = await listenForWakes(node.home, () => {
    if (work.diskFailures === 0) void tick();
  });
  void tick();
  schedule();
  work.holdRelayPulls();

  return {
    url,
    tick,
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await wakes?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await work.stop();
    },
  };
}
