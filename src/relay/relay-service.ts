// One running relay: the writer lock, the relay key, the store, the core and the HTTP face,
// started in that order and stopped in reverse. `agentmbx relay serve` and the tests use it.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { fingerprint } from '../protocol/fingerprint.ts';
import type { EnrolmentAuthority } from './authority/enrolment-authority.ts';
import { HEARTBEAT_INTERVAL_MS, type RelayConfig } from './config.ts';
import { storeChallenges } from './core/challenges.ts';
import { PendingWriters } from './core/pending-writers.ts';
import { memoryPushRate, storePushRate } from './core/push-rate.ts';
import { storePushWriter } from './core/push-writes.ts';
import { createRelayCore, type RelayCore } from './core/relay-core.ts';
import type { EncodedJson } from './core/encoded-json.ts';
import type { HeldPulls } from './core/held-pulls.ts';
import { isWakeMessage, pullWakes, wakeMessage, type PullWakes } from './core/pull-wakes.ts';
import { INLINE_HOP_VERIFIER } from './crypto/hop-verifier.ts';
import { hopVerifyPool } from './crypto/hop-verify-pool.ts';
import { sendWakeToWorkers } from './relay-group.ts';
import { sweep } from './core/sweep.ts';
import { checkHealth } from './http/health.ts';
import { RelayMetrics } from './http/metrics.ts';
import type { Ticker } from '../common/ticker.ts';
import { bindPort, probePort, type BoundPort } from './http/bound-port.ts';
import type { EpochRotation } from './ops/epoch.ts';
import { checkAtStartOrStandBy, writeHeartbeat } from './ops/heartbeat.ts';
import { startPeriodic } from './ops/periodic.ts';
import { loadOrCreateRelayKey } from './ops/relay-key.ts';
import { acquireWriterLock } from './ops/writer-lock.ts';
import { StoreDiskError, StoreLockLostError } from './store/errors.ts';
import { listenForStoreItemWakes, openRelayStore, storeBackendOf } from './store/open-relay-store.ts';
import type { RelayStore } from './store/relay-store.ts';
import type { SigningKey } from '../protocol/keys.ts';
import { freeSpaceText } from '../common/disk-fault.ts';

export const RELAY_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

export interface RelayServiceOptions {
  storeDir: string;
  /** a postgres:// URL: the store several relay processes share (default: the SQLite store in storeDir) */
  store?: string;
  port: number;
  bind: string;
  config: RelayConfig;
  env: NodeJS.ProcessEnv;
  authority?: EnrolmentAuthority;
  nowMs?: () => number;
  /** live enrolments admitted (default MAX_LIVE_ENROLMENTS; tests set it lower) */
  maxLiveEnrolments?: number;
  /** tests: this process's held-pull table (default: one capped by this process's heap) */
  heldPulls?: HeldPulls<EncodedJson>;
  /** how long to wait for another relay process to release the store (0: refuse at once) */
  lockWaitMs?: number;
  /** period of the heartbeat (default HEARTBEAT_INTERVAL_MS) */
  heartbeatIntervalMs?: number;
  /** where the service reports what an operator should know (default: a line on stderr) */
  log?: (line: string) => void;
  /** structured request logs (logging.ts), or none */
  requestLog?: Logger;
  /** serve /metrics (and /healthz) on this separate address instead of the relay's port */
  metricsBind?: { host: string; port: number };
  /** the request log's poll-summary timer (default: every POLL_SUMMARY_WINDOW_MS, unref'd; tests fire it by hand) */
  pollSummaryTicker?: Ticker;
  /** PostgreSQL: the store lock's check timer (default: every STORE_LOCK_CHECK_INTERVAL_MS, unref'd; tests fire it by hand) */
  lockCheckTicker?: Ticker;
}

export interface RelayService {
  url: string;
  epoch: string;
  relayPubkey: string;
  fingerprint: string;
  core: RelayCore;
  /** the epoch rotation the start-up heartbeat check made, or null */
  epochRotatedAtStart: EpochRotation | null;
  metrics: RelayMetrics;
  /** the separate metrics listener (--metrics-bind), or null when /metrics is on the relay's port */
  metricsUrl: string | null;
  /** stops accepting, finishes requests in flight, closes the store, releases the lock */
  close(): Promise<void>;
}

/**
 * Who a process is in the relay: 'alone' (the default) is the whole relay; in a group (`relay serve
 * --workers N`, relay-group.ts) the primary is the 'leader' (startRelayLeader) and every HTTP
 * process a 'worker', which takes no lock and runs no heartbeat or sweep: the leader holds the
 * store for the group and runs those.
 */
export type RelayRole = 'alone' | 'worker';

/**
 * A worker's hop-verify threads: at most the setting, and at most its share of the cores that run
 * no worker. When every core runs a worker, a thread only competes with the event loops, and handing
 * a check to it (postMessage, the worker's wake-up and answer) costs the event loop more than the
 * Ed25519 verification itself (docs/benchmark.md), so each worker checks on its own event loop.
 */
export function workerVerifyThreads(setting: number, workers: number, cores = availableParallelism()): number {
  return Math.min(setting, Math.floor(Math.max(0, cores - workers) / workers));
}

export async function startRelayService(options: RelayServiceOptions & { role?: RelayRole; workers?: number }): Promise<RelayService> {
  const worker = options.role === 'worker';
  // the ports first (bound-port.ts): a start that cannot serve must not rotate the epoch or write a
  // heartbeat. A worker's ports are the group's: node:cluster shares the primary's listening handle.
  const ports: BoundPort[] = [];
  const closePorts = async (): Promise<void> => {
    for (const port of ports.splice(0).reverse()) await port.close();
  };
  const metrics = new RelayMetrics();
  const log =
    options.log ??
    ((line: string) => {
      process.stderr.write(`${line}\n`);
    });
  const pendingWriters = new PendingWriters();
  const served: ServedEpoch = { epoch: null };
  let state: Awaited<ReturnType<typeof openRelayState>>;
  try {
    ports.push(await bindPort(options.bind, options.port, '--port (env PORT) or --bind', { shared: worker }));
    if (options.metricsBind !== undefined) ports.push(await bindPort(options.metricsBind.host, options.metricsBind.port, '--metrics-bind', { shared: worker }));
    state = await openRelayState(options, { takesLock: !worker, shared: worker, metrics, log, pendingWriters, served });
  } catch (err) {
    await closePorts();
    throw err;
  }
  const [relayPort, metricsPort = null] = ports;
  const { store, relayKey, nowMs, cleanups, unwind } = state;
  // closed last (cleanups run in reverse), once the HTTP face has answered its last request
  cleanups.unshift(closePorts);
  // other processes answer for this relay too: a worker's siblings, or every relay process on the PostgreSQL store
  const sharesState = worker || storeBackendOf(options.store ?? options.storeDir) === 'postgres';
  const perMinute = options.config.pushes_per_minute;
  const pushWriter = storePushWriter({ store, config: options.config, nowMs, pushRate: sharesState ? storePushRate(perMinute) : memoryPushRate(perMinute) });
  try {
    const threads = worker ? workerVerifyThreads(options.config.hop_verify_threads, options.workers ?? 1) : options.config.hop_verify_threads;
    const hopVerifier = threads === 0 ? INLINE_HOP_VERIFIER : hopVerifyPool({ threads, onFailure: (reason) => log(`agentmbx relay: ${reason}`) });
    // closed after the HTTP face (cleanups run in reverse), so requests in flight still get their checks
    cleanups.push(() => hopVerifier.close());
    const rotation = worker ? null : await checkAtStart(store, nowMs, log);
    if (rotation !== null) metrics.epochRotated();
    metrics.attachQueue(() => store.read((reader) => reader.items.queueTotals()), nowMs);
    const wakes = await othersToWake(options, worker ? 'worker' : 'alone', log);
    if (wakes.close !== undefined) cleanups.push(wakes.close);
    const core = await createRelayCore({
      store,
      relayKey,
      config: options.config,
      version: RELAY_VERSION,
      hopVerifier,
      pendingWriters,
      pushWriter,
      observer: metrics,
      pullWakes: wakes.pullWakes,
      ...(sharesState ? { challenges: storeChallenges(store) } : {}),
      ...(options.authority ? { authority: options.authority } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
      ...(options.maxLiveEnrolments === undefined ? {} : { maxLiveEnrolments: options.maxLiveEnrolments }),
      ...(options.heldPulls === undefined ? {} : { heldPulls: options.heldPulls }),
    });
    served.epoch = core.context.epoch;
    metrics.attachHeldPulls(
      () => core.context.heldPulls.size,
      () => core.context.heldPulls.cap,
    );
    const heartbeatIntervalMs = options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS;
    if (!worker) cleanups.push(...startHousekeeping(core, heartbeatIntervalMs, metrics, log));
    const hosted = core.context.hosted;
    if (hosted !== null) {
      // keeps the issuer's keys fresh on a quiet relay, and retries an outage once a minute (docs/hosted-relay.md)
      const refresh = async (): Promise<void> => {
        const failure = await hosted.authority.refreshKeys();
        if (failure !== null) log(`agentmbx relay: the token issuer's key set could not be fetched (${failure})`);
      };
      const { JWKS_MIN_FETCH_INTERVAL_MS } = await import('./authority/jwks-cache.ts');
      const keys = startPeriodic(refresh, JWKS_MIN_FETCH_INTERVAL_MS, { runNow: true, onError: onError(log, 'JWKS refresh') });
      cleanups.push(() => keys.stop());
    }
    const observability = {
      metrics,
      logger: options.requestLog ?? null,
      metricsOnRelayPort: options.metricsBind === undefined,
      nowMs,
      health: () => checkHealth({ store, nowMs, heartbeatIntervalMs, diskFault: () => store.diskFault() }),
      ...(options.pollSummaryTicker === undefined ? {} : { pollSummaryTicker: options.pollSummaryTicker }),
    };
    // the HTTP face (fastify, the request log) is loaded by the processes that serve it: a group's primary does not keep it in memory
    const [{ relayObserver, serveMetrics }, { buildRelayHttp }] = await Promise.all([import('./http/observability.ts'), import('./http/server.ts')]);
    const observer = relayObserver(observability);
    // the last poll summary is written once the HTTP face has answered its last request
    cleanups.push(() => observer.close());
    if (relayPort === undefined) throw new Error('the relay port was not bound');
    const app = buildRelayHttp(core, options.config, relayPort, observer);
    cleanups.push(() => app.close());
    await app.ready();
    relayPort.open();
    if (metricsPort !== null) serveMetrics(observability, metricsPort);
    return {
      url: relayPort.url,
      epoch: core.context.epoch,
      relayPubkey: relayKey.publicKey,
      fingerprint: fingerprint(relayKey.publicKey),
      core,
      epochRotatedAtStart: rotation,
      metrics,
      metricsUrl: metricsPort?.url ?? null,
      close: unwind,
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/** The primary of a relay group: the store's writer lock for the whole group, the start-up check, the heartbeat and the sweeps; no HTTP. */
export interface RelayLeader {
  epoch: string;
  fingerprint: string;
  epochRotatedAtStart: EpochRotation | null;
  /** its sweeps and start-up rotation, added to the group's /metrics (group-metrics.ts) */
  metrics: RelayMetrics;
  /** stops the heartbeat and sweeps, closes the store, releases the lock */
  close(): Promise<void>;
}

export async function startRelayLeader(options: Omit<RelayServiceOptions, 'requestLog'>): Promise<RelayLeader> {
  // the group's port and metrics port must be free before the epoch may rotate or a heartbeat be
  // written. The workers bind them (node:cluster creates the shared handle at the first worker's
  // listen), so the primary can only check them here: a narrow window remains in a group.
  await probePort(options.bind, options.port, '--port (env PORT) or --bind');
  if (options.metricsBind !== undefined) await probePort(options.metricsBind.host, options.metricsBind.port, '--metrics-bind');
  const metrics = new RelayMetrics();
  const log =
    options.log ??
    ((line: string) => {
      process.stderr.write(`${line}\n`);
    });
  const served: ServedEpoch = { epoch: null };
  const state = await openRelayState(options, { takesLock: true, shared: true, metrics, log, pendingWriters: new PendingWriters(), served });
  const { store, relayKey, nowMs, cleanups, unwind } = state;
  try {
    const rotation = await checkAtStart(store, nowMs, log);
    if (rotation !== null) metrics.epochRotated();
    // the leader's sweeps queue expiry notices: the workers' held pulls hear of them
    const wakes = await othersToWake(options, 'leader', log);
    if (wakes.close !== undefined) cleanups.push(wakes.close);
    const core = await createRelayCore({
      store,
      relayKey,
      config: options.config,
      version: RELAY_VERSION,
      pullWakes: wakes.pullWakes,
      ...(options.authority ? { authority: options.authority } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
    });
    served.epoch = core.context.epoch;
    cleanups.push(...startHousekeeping(core, options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS, metrics, log));
    return { epoch: core.context.epoch, fingerprint: fingerprint(relayKey.publicKey), epochRotatedAtStart: rotation, metrics, close: unwind };
  } catch (err) {
    await unwind();
    throw err;
  }
}

type Cleanup = () => Promise<void> | void;

/**
 * Who else hears of items this process commits, and how this process hears of theirs (held pulls,
 * core/pull-wakes.ts): on PostgreSQL every relay process on the database (LISTEN/NOTIFY); in a
 * SQLite group the other workers, through the primary (relay-group.ts forwards a worker's message
 * to its siblings, and sends the leader's own); a lone SQLite relay has nobody else.
 */
async function othersToWake(
  options: Omit<RelayServiceOptions, 'requestLog'>,
  role: RelayRole | 'leader',
  log: (line: string) => void,
): Promise<{ pullWakes: (held: HeldPulls<EncodedJson>) => PullWakes; close?: Cleanup }> {
  let heard: HeldPulls<EncodedJson> | null = null;
  const listener = await listenForStoreItemWakes(options.store ?? options.storeDir, {
    log,
    onKeys: (keys) => heard?.wake(keys),
    onReconnect: () => heard?.wakeAll(),
  });
  if (listener !== null) {
    return {
      pullWakes: (held) => {
        heard = held;
        return pullWakes(
          (keys) => held.wake(keys),
          (keys) => listener.notify(keys),
        );
      },
      close: () => listener.close(),
    };
  }
  if (role === 'leader')
    return {
      pullWakes: () =>
        pullWakes(
          () => {},
          (keys) => sendWakeToWorkers(keys),
        ),
    };
  if (role === 'alone') return { pullWakes: (held) => pullWakes((keys) => held.wake(keys)) };
  return {
    pullWakes: (held) => {
      const onMessage = (message: unknown): void => {
        if (isWakeMessage(message)) held.wake(message.keys);
      };
      process.on('message', onMessage);
      return pullWakes(
        (keys) => held.wake(keys),
        (keys) => {
          process.send?.(wakeMessage(keys));
        },
      );
    },
  };
}

/** The epoch the process serves once its core has read it (a lost store lock taken again must find it unchanged). */
interface ServedEpoch {
  epoch: string | null;
}

/** The start-up heartbeat check (and epoch rotation, logged) of the process that holds the lock, or a standby's wait (heartbeat.ts). */
async function checkAtStart(store: RelayStore, nowMs: () => number, log: (line: string) => void): Promise<EpochRotation | null> {
  const rotation = await checkAtStartOrStandBy(store, nowMs);
  if (rotation !== null) log(`agentmbx relay: epoch rotated at start (${rotation.reason}): ${rotation.from} -> ${rotation.to}`);
  return rotation;
}

/** The writer lock (unless a worker's), the relay key and the store, with the cleanups that undo them in reverse. */
async function openRelayState(
  options: Omit<RelayServiceOptions, 'requestLog'>,
  how: { takesLock: boolean; shared: boolean; metrics: RelayMetrics; log: (line: string) => void; pendingWriters: PendingWriters; served: ServedEpoch },
): Promise<{ store: RelayStore; relayKey: SigningKey; nowMs: () => number; cleanups: Cleanup[]; unwind: () => Promise<void> }> {
  const cleanups: Cleanup[] = [];
  const unwind = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  };
  try {
    const location = options.store ?? options.storeDir;
    // a SQLite store's group has one lock file; a PostgreSQL store is shared by design, and its own
    // lock (taken shared by every process when it opens) keeps offline operations out instead
    if (how.takesLock && storeBackendOf(location) === 'sqlite') {
      const lock = await acquireWriterLock(options.storeDir, { waitMs: options.lockWaitMs ?? 0 });
      cleanups.push(() => lock.release());
    }
    const relayKey = loadOrCreateRelayKey(options.storeDir, options.env);
    const { metrics, log, pendingWriters } = how;
    const groupCommit = { maxItems: options.config.group_commit_max_items, maxWaitMs: options.config.group_commit_max_wait_ms };
    const store = await openRelayStore({
      location,
      relayPubkey: relayKey.publicKey,
      groupCommit,
      onGroupCommit: (size, ms) => metrics.groupCommitted(size, ms),
      writersPending: () => pendingWriters.any(),
      onDiskRefusal: (fault) => metrics.diskRefused(fault.fault),
      onDiskState: (fault) => log(diskStateLine(options.storeDir, fault)),
      sharedWriters: how.shared,
      servedEpoch: () => how.served.epoch,
      onLockState: (lost) => log(lost === null ? 'agentmbx relay: the store lock is held again: serving' : `agentmbx relay: ${lost.message}`),
      ...(options.lockCheckTicker ? { lockCheckTicker: options.lockCheckTicker } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
    });
    cleanups.push(() => store.close());
    return { store, relayKey, nowMs: options.nowMs ?? Date.now, cleanups, unwind };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/**
 * The heartbeat and the expiry sweep, run by the lone relay or a group's leader while it holds the
 * store's housekeeping lease (one process at a time of all those on a PostgreSQL store); a standby
 * asks again at each tick.
 */
function startHousekeeping(core: RelayCore, heartbeatIntervalMs: number, metrics: RelayMetrics, log: (line: string) => void): Cleanup[] {
  const { store, nowMs, config } = core.context;
  const leased = housekeepingLease(store, log);
  const heartbeat = startPeriodic(
    async () => {
      if (await leased()) await writeHeartbeat(store, nowMs());
    },
    heartbeatIntervalMs,
    { onError: onError(log, 'heartbeat') },
  );
  const countedSweep = async (): Promise<void> => {
    if (!(await leased())) return;
    await sweep(core.context).then(
      () => metrics.swept(true),
      (error: unknown) => {
        metrics.swept(false);
        throw error;
      },
    );
  };
  const sweeper = startPeriodic(countedSweep, config.sweep_interval_ms, { runNow: true, onError: onError(log, 'expiry sweep') });
  return [() => heartbeat.stop(), () => sweeper.stop()];
}

/** Asks the store for the housekeeping lease; logs when this process, a standby so far, takes it over (a lost lease is logged as the lost store lock). */
function housekeepingLease(store: RelayStore, log: (line: string) => void): () => Promise<boolean> {
  let held: boolean | null = null;
  return async () => {
    const now = await store.housekeeping();
    if (now && held === false) log('agentmbx relay: this process took over the heartbeat and sweeps (the housekeeping lease was free)');
    held = now;
    return now;
  };
}

function onError(log: (line: string) => void, what: string) {
  return (error: unknown): void => {
    // a disk fault, or a lost store lock, is logged once when it starts and once when it ends (onDiskState, onLockState), not per run
    if (error instanceof StoreDiskError || error instanceof StoreLockLostError) return;
    log(`agentmbx relay: ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
  };
}

/** The operator's line when the store's disk starts or stops refusing writes: the store directory and its free space. */
function diskStateLine(storeDir: string, fault: StoreDiskError | null): string {
  if (fault === null) return `agentmbx relay: the store in ${storeDir} writes again (${freeSpaceText(storeDir)})`;
  return `agentmbx relay: writes refused, store in ${storeDir}: ${fault.message}`;
}
