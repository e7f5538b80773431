// One running relay: the writer lock, the relay key, the store, the core and the HTTP face,
// started in that order and stopped in reverse. `agentmbx relay serve` and the tests use it.
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import type { Logger } from 'pino';
import { fingerprint } from '../protocol/fingerprint.ts';
import type { EnrolmentAuthority } from './authority/enrolment-authority.ts';
import { JWKS_MIN_FETCH_INTERVAL_MS } from './authority/jwks-cache.ts';
import { HEARTBEAT_INTERVAL_MS, type RelayConfig } from './config.ts';
import { PendingWriters } from './core/pending-writers.ts';
import { createRelayCore, type RelayCore } from './core/relay-core.ts';
import { INLINE_HOP_VERIFIER } from './crypto/hop-verifier.ts';
import { hopVerifyPool } from './crypto/hop-verify-pool.ts';
import { sweep } from './core/sweep.ts';
import { checkHealth } from './http/health.ts';
import { RelayMetrics } from './http/metrics.ts';
import { relayObserver, startMetricsServer } from './http/observability.ts';
import { buildRelayHttp } from './http/server.ts';
import type { EpochRotation } from './ops/epoch.ts';
import { checkHeartbeatAtStart, writeHeartbeat } from './ops/heartbeat.ts';
import { startPeriodic } from './ops/periodic.ts';
import { loadOrCreateRelayKey } from './ops/relay-key.ts';
import { acquireWriterLock } from './ops/writer-lock.ts';
import { StoreDiskError } from './store/errors.ts';
import { openRelayStore, storeBackendOf } from './store/open-relay-store.ts';
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
 * Fails (EADDRINUSE, EACCES…) when `host:port` cannot be bound, before anything touches the store:
 * a start that cannot serve must not rotate the epoch or write a heartbeat. Port 0 always binds.
 */
async function checkBindable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, resolve);
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

export async function startRelayService(options: RelayServiceOptions): Promise<RelayService> {
  await checkBindable(options.bind, options.port);
  if (options.metricsBind !== undefined) await checkBindable(options.metricsBind.host, options.metricsBind.port);
  const location = options.store ?? options.storeDir;
  // a SQLite store has one writer process; a PostgreSQL store is shared, and its own lock (taken
  // shared when it opens) keeps offline operations out instead
  const lock = storeBackendOf(location) === 'sqlite' ? await acquireWriterLock(options.storeDir, { waitMs: options.lockWaitMs ?? 0 }) : null;
  const cleanups: Array<() => Promise<void> | void> = [() => lock?.release()];
  const unwind = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  };
  try {
    const relayKey = loadOrCreateRelayKey(options.storeDir, options.env);
    const groupCommit = { maxItems: options.config.group_commit_max_items, maxWaitMs: options.config.group_commit_max_wait_ms };
    const metrics = new RelayMetrics();
    const log = options.log ?? ((line: string) => { process.stderr.write(`${line}\n`); });
    const pendingWriters = new PendingWriters();
    const threads = options.config.hop_verify_threads;
    const hopVerifier = threads === 0 ? INLINE_HOP_VERIFIER : hopVerifyPool({ threads, onFailure: (reason) => log(`agentmbx relay: ${reason}`) });
    // closed after the HTTP face (cleanups run in reverse), so requests in flight still get their checks
    cleanups.push(() => hopVerifier.close());
    const store = await openRelayStore({
      location, relayPubkey: relayKey.publicKey, groupCommit, onGroupCommit: (size, ms) => metrics.groupCommitted(size, ms),
      writersPending: () => pendingWriters.any(),
      onDiskRefusal: (fault) => metrics.diskRefused(fault.fault),
      onDiskState: (fault) => log(diskStateLine(options.storeDir, fault)),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
    });
    cleanups.push(() => store.close());
    const nowMs = options.nowMs ?? Date.now;
    const rotation = await checkHeartbeatAtStart(store, nowMs());
    if (rotation !== null) log(`agentmbx relay: epoch rotated at start (${rotation.reason}): ${rotation.from} -> ${rotation.to}`);
    if (rotation !== null) metrics.epochRotated();
    metrics.attachQueue(() => store.read((reader) => reader.items.queueTotals()), nowMs);
    const core = await createRelayCore({
      store, relayKey, config: options.config, version: RELAY_VERSION, hopVerifier, pendingWriters,
      ...(options.authority ? { authority: options.authority } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
      ...(options.maxLiveEnrolments === undefined ? {} : { maxLiveEnrolments: options.maxLiveEnrolments }),
    });
    const onError = (what: string) => (error: unknown): void => {
      // a disk fault is logged once when it starts and once when it ends (onDiskState), not per run
      if (error instanceof StoreDiskError) return;
      log(`agentmbx relay: ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
    };
    const heartbeatIntervalMs = options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS;
    const heartbeat = startPeriodic(() => writeHeartbeat(store, nowMs()), heartbeatIntervalMs, { onError: onError('heartbeat') });
    cleanups.push(() => heartbeat.stop());
    const countedSweep = async (): Promise<void> => {
      await sweep(core.context).then(() => metrics.swept(true), (error: unknown) => { metrics.swept(false); throw error; });
    };
    const sweeper = startPeriodic(countedSweep, options.config.sweep_interval_ms, { runNow: true, onError: onError('expiry sweep') });
    cleanups.push(() => sweeper.stop());
    const hosted = core.context.hosted;
    if (hosted !== null) {
      // keeps the issuer's keys fresh on a quiet relay, and retries an outage once a minute (docs/hosted-relay.md)
      const refresh = async (): Promise<void> => {
        const failure = await hosted.authority.refreshKeys();
        if (failure !== null) log(`agentmbx relay: the token issuer's key set could not be fetched (${failure})`);
      };
      const keys = startPeriodic(refresh, JWKS_MIN_FETCH_INTERVAL_MS, { runNow: true, onError: onError('JWKS refresh') });
      cleanups.push(() => keys.stop());
    }
    const observability = {
      metrics, logger: options.requestLog ?? null, metricsOnRelayPort: options.metricsBind === undefined, nowMs,
      health: () => checkHealth({ store, nowMs, heartbeatIntervalMs, diskFault: () => store.diskFault() }),
    };
    const app = buildRelayHttp(core, options.config, relayObserver(observability));
    cleanups.push(() => app.close());
    await app.listen({ port: options.port, host: options.bind });
    const metricsServer = options.metricsBind === undefined ? null : await startMetricsServer(observability, options.metricsBind.host, options.metricsBind.port);
    if (metricsServer !== null) cleanups.push(() => metricsServer.close());
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    const host = options.bind.includes(':') ? `[${options.bind}]` : options.bind;
    return {
      url: `http://${host}:${port}`,
      epoch: core.context.epoch,
      relayPubkey: relayKey.publicKey,
      fingerprint: fingerprint(relayKey.publicKey),
      core,
      epochRotatedAtStart: rotation,
      metrics,
      metricsUrl: metricsServer?.url ?? null,
      close: unwind,
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/** The operator's line when the store's disk starts or stops refusing writes: the store directory and its free space. */
function diskStateLine(storeDir: string, fault: StoreDiskError | null): string {
  if (fault === null) return `agentmbx relay: the store in ${storeDir} writes again (${freeSpaceText(storeDir)})`;
  return `agentmbx relay: writes refused, store in ${storeDir}: ${fault.message}`;
}
