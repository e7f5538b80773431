// The daemon: the LAN server plus a tick (about every 2 s) that pulls from the relay and, apart from
// that, refreshes keys, fetches missing peer enc keys and flushes the outbox, each peer and
// transport in its own lane (delivery-lanes.ts). A peer's verified call wakes the tick at once.
import { networkInterfaces } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { HostNode } from './node.ts';
import { DeliveryLanes } from './delivery-lanes.ts';
import { FailureTally } from './failure-tally.ts';
import { flushOutbox } from './outbox.ts';
import { nameDiskError } from './store/disk-errors.ts';
import { refreshKeys } from './rotation.ts';
import { fetchPeerEncKey, LanTransport } from './transport/lan/client.ts';
import { RelayLink } from './transport/relay/relay-link.ts';
import { createLanServer } from './transport/lan/server.ts';
import type { OutboxRow } from './store/outbox-table.ts';
import type { PeerRow } from './store/peers-table.ts';
import type { RowResult, Transport } from './transport/transport.ts';

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

/**
 * Runs `job` one at a time: a call while it runs folds into one more run after it (and shares its
 * promise). A failed run is reported, never thrown.
 */
function coalesced(job: () => Promise<void>, onError: (err: unknown) => void, stopped: () => boolean): { run(): Promise<void>; idle(): Promise<void> } {
  let running: Promise<void> | null = null;
  let again = false;
  const run = (): Promise<void> => {
    if (running !== null) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await job();
        } catch (err) {
          onError(err);
        }
      } while (again && !stopped());
    })().finally(() => { running = null; });
    return running;
  };
  return { run, idle: () => running ?? Promise.resolve() };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function startDaemon(node: HostNode, options: DaemonOptions): Promise<RunningDaemon> {
  const log = options.log ?? (() => {});
  const transport: Transport = new LanTransport(node);
  const relay = new RelayLink(node, log);
  const failures = new FailureTally(log, node.nowMs());
  const encTried = new Map<string, number>();
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const isStopped = (): boolean => stopped;
  const tickMs = options.tickMs ?? TICK_MS;
  /** flushes failed in a row because of the disk (0: it takes writes); the tick backs off while it lasts */
  let diskFailures = 0;

  /** One line when the disk starts refusing writes (by a job, a delivery or a peer's call); ticks back off until a flush succeeds. */
  function noteDiskFault(named: string): void {
    if (diskFailures === 0) log(`${named}; the daemon retries, less often while it lasts (mail waits in the outbox)`);
    diskFailures += 1;
  }

  /** A failed job or delivery: a disk refusal is named once and backs the tick off; anything else is logged as `what failed: …`. */
  const failed = (what: string) => (err: unknown): void => {
    const named = nameDiskError(err, node.home);
    if (named !== null) noteDiskFault(named);
    else log(`${what} failed: ${messageOf(err)}`);
  };

  // A lane that finished may leave rows a pass skipped while it was busy: flush again for them.
  const lanes = new DeliveryLanes(failed('delivery'), () => { if (!stopped && diskFailures === 0) void flush.run(); });

  async function fetchEncKey(peer: PeerRow): Promise<void> {
    try {
      await fetchPeerEncKey(node, peer);
      log(`fetched the enc key of ${peer.host}`);
    } catch (err) {
      node.store.peers.noteError(peer.host, messageOf(err));
      try {
        if (await relay.fetchEncKey(peer) !== null) log(`fetched the enc key of ${peer.host} through the relay`);
      } catch (relayErr) {
        log(messageOf(relayErr));
      }
    }
  }

  /** Starts fetching missing peer enc keys, each in its peer's LAN lane (one LAN call per peer at a time). */
  function fetchMissingEncKeys(): void {
    const now = node.nowMs();
    for (const peer of node.store.peers.list()) {
      if (peer.enc_pub !== null) continue;
      if (now - (encTried.get(peer.host) ?? -Infinity) < ENC_KEY_RETRY_MS) continue;
      if (lanes.start(`${peer.host}\n${transport.name}`, [], () => fetchEncKey(peer))) encTried.set(peer.host, now);
    }
    // Bounded by the peers table: forget hosts that are no longer peers.
    for (const host of encTried.keys()) if (node.store.peers.get(host) === undefined) encTried.delete(host);
  }

  function report(row: OutboxRow, result: RowResult, via: string): void {
    if (result.outcome !== 'failed' || row.attempts === 0) log(`${row.kind} ${row.item_id} -> ${row.peer_host}: ${result.detail}`);
    if (result.outcome === 'failed') failures.note(row.peer_host, via, result.detail);
  }

  // The relay pull and the outbox flush are separate jobs: neither waits for the other, and the
  // flush starts each peer's deliveries in lanes without waiting for them.
  const pull = coalesced(async () => {
    await relay.prepare(transport);
    // What a pull applied may have queued receipts or bounces: they leave now, not a tick later.
    if (await relay.pull() > 0 && !stopped) void flush.run();
  }, failed('relay pull'), isStopped);

  const flush = coalesced(async () => {
    refreshKeys(node);
    const choose = await relay.prepare(transport);
    fetchMissingEncKeys();
    await flushOutbox(node, choose, report, lanes);
    failures.summarize(node.nowMs());
    if (diskFailures > 0) log(`the disk holding ${node.home} takes writes again`);
    diskFailures = 0;
  }, failed('flush'), isStopped);

  /** One tick: a pull and a flush, and (for callers who wait) the deliveries it started. */
  async function tick(): Promise<void> {
    await Promise.all([pull.run(), flush.run()]);
    await lanes.idle();
  }

  // Ticks go on every tickMs whatever the last one still waits for (the jobs fold overlapping calls);
  // while the disk refuses writes, the tick backs off.
  function schedule(): void {
    if (stopped) return;
    const delay = diskFailures === 0 ? tickMs : Math.min(tickMs * 2 ** diskFailures, DISK_BACKOFF_MAX_MS);
    timer = setTimeout(() => {
      void tick();
      schedule();
    }, delay);
  }

  const interrupted = node.store.peers.failInterruptedAttempts();
  if (interrupted.length > 0) log(`LAN attempts cut short by the last stop count as failed: ${interrupted.join(', ')}`);
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
  void tick();
  schedule();

  return {
    url,
    tick,
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
      await Promise.all([pull.idle(), flush.idle()]);
      await lanes.idle();
      failures.summarize(node.nowMs(), true);
    },
  };
}
