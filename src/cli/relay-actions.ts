// What the `agentmbx relay …` commands do. Loaded only when such a command runs, so that host
// commands do not pay for the relay's server, store and logging modules at every start.
import cluster from 'node:cluster';
import { flushCompileCache } from 'node:module';
import type { Logger } from 'pino';
import { ConfigError } from '../relay/config.ts';
import { resolveServeOptions, type ServeOptions } from './relay-serve-flags.ts';
import { backupRelayStore } from '../relay/ops/backup.ts';
import { rotateEpochOffline } from '../relay/ops/epoch.ts';
import { RelayOpsError } from '../relay/ops/ops-error.ts';
import { generateRelayKeyText, RelayKeyError } from '../relay/ops/relay-key.ts';
import { restoreRelayStore } from '../relay/ops/restore.ts';
import { releaseStartupMemory } from '../relay/ops/startup-memory.ts';
import { WriterLockBusyError } from '../relay/ops/writer-lock.ts';
import { isRelayLogLevel, RELAY_LOG_LEVELS, type RelayLogLevel } from '../relay/http/log-levels.ts';
import { PortBindError } from '../relay/http/bound-port.ts';
import { joinGroupMetrics } from '../relay/group-metrics.ts';
import { exitWithPrimary, reportReady, startWorkerGroup, type WorkerGroup } from '../relay/relay-group.ts';
import { startRelayLeader, startRelayService } from '../relay/relay-service.ts';
import { MAX_OPS_LOG_ENTRIES, type StoredOpsLogEntry } from '../relay/store/relay-store.ts';
import { StoreOpenError } from '../relay/store/errors.ts';
import { readRelayStoreOpsLog } from '../relay/store/open-relay-store.ts';
import { CliError } from './cli-error.ts';
import { reachableUrl } from '../common/lan-address.ts';
import { diskFaultOf, diskFaultSentence } from '../common/disk-fault.ts';
import { printJson, printJsonLine, printResult } from './output.ts';
import { positiveInteger } from './parse-args.ts';

/** Failures an operator can act on become one line (exit 2 for a bad setting); anything else stays unexpected. */
async function operate<T>(fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, 'USAGE');
    const fault = diskFaultOf(err);
    if (fault !== null)
      throw new CliError(
        `${diskFaultSentence(fault, { disk: 'the disk', afterwards: ', then try again' })} (${err instanceof Error ? err.message : String(err)})`,
        'STORAGE',
      );
    if (
      err instanceof RelayOpsError ||
      err instanceof StoreOpenError ||
      err instanceof RelayKeyError ||
      err instanceof WriterLockBusyError ||
      err instanceof PortBindError
    ) {
      throw new CliError(err.message);
    }
    throw err;
  }
}

/** The store directory exactly as `relay serve` resolves it. */
function storeDirOf(flags: { storeDir?: string }): string {
  return resolveServeOptions({ ...(flags.storeDir === undefined ? {} : { storeDir: flags.storeDir }) }, process.env).storeDir;
}

/** The store exactly as `relay serve` resolves it: --store or MBX_RELAY_STORE (a postgres:// URL), else the store directory. */
function storeOf(flags: { storeDir?: string; store?: string }): string {
  const resolved = resolveServeOptions(
    { ...(flags.storeDir === undefined ? {} : { storeDir: flags.storeDir }), ...(flags.store === undefined ? {} : { store: flags.store }) },
    process.env,
  );
  return resolved.store ?? resolved.storeDir;
}

/** The request log's level: --log-level, else MBX_RELAY_LOG_LEVEL, else info. */
function logLevelOf(flag: string | undefined): RelayLogLevel {
  const level = flag ?? (process.env.MBX_RELAY_LOG_LEVEL || undefined) ?? 'info';
  if (!isRelayLogLevel(level)) throw new CliError(`bad log level "${level}": one of ${RELAY_LOG_LEVELS.join(', ')}`, 'USAGE');
  return level;
}

/**
 * `relay serve`; with --json its own lines (listening, stopped) are JSON like the request log. With
 * more than one worker this process becomes the group's primary (relay-group.ts) and the workers it
 * forks come back here as cluster workers.
 */
export async function serve(flags: Record<string, string | undefined>, { json, logLevel }: { json: boolean; logLevel: string | undefined }): Promise<void> {
  const level = logLevelOf(logLevel);
  const options = await operate(() => resolveServeOptions(flags, process.env));
  // a group's primary serves no HTTP and writes no request log: only the processes that do load pino
  if (!cluster.isWorker && options.workers > 1) return serveGroup(options, json);
  const { createRelayLogger } = await import('../relay/http/logging.ts');
  const requestLog = createRelayLogger(undefined, level);
  if (cluster.isWorker) return serveAsWorker(options, requestLog);
  const service = await operate(() => startRelayService({ ...options, env: process.env, requestLog }));
  settleOnceServing();
  // listen for the stop signals before the ready line: whoever reads it may signal at once
  const stopped = stopSignal();
  const reachable = reachableUrl(service.url);
  printResult(
    json,
    { listening: service.url, reachable: reachable ?? service.url, fingerprint: service.fingerprint, epoch: service.epoch, metrics: service.metricsUrl },
    `agentmbx relay listening on ${service.url} fingerprint ${service.fingerprint} epoch ${service.epoch}${reachableNote(reachable)}`,
  );
  if (service.metricsUrl !== null) process.stderr.write(`agentmbx relay: metrics on ${service.metricsUrl}/metrics\n`);
  await stopped;
  await service.close();
  await new Promise<void>((resolve) => {
    requestLog.flush(() => resolve());
  });
  printStopped(json);
}

/**
 * Once a relay process serves: writes Node's compile cache (bin/agentmbx enables it) now rather than
 * at its exit, which a worker's process.exit or a SIGKILL skips (without the cache every start runs
 * the TypeScript stripper again, and each process keeps it in memory), and gives back the memory its
 * start left behind (ops/startup-memory.ts; docs/relay-operator.md "Memory").
 */
function settleOnceServing(): void {
  flushCompileCache();
  releaseStartupMemory();
}

/** Resolves at the first SIGTERM or SIGINT; later ones are ignored (the process is already stopping). */
function stopSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.on('SIGTERM', () => resolve());
    process.on('SIGINT', () => resolve());
  });
}

function printStopped(json: boolean): void {
  if (json) printJsonLine({ stopped: true });
  else process.stdout.write('agentmbx relay stopped\n');
}

/** The end of the start line of a relay on every interface: a URL hosts can use. */
function reachableNote(reachable: string | null): string {
  return reachable === null ? '' : ` (every interface: hosts on this network reach it at ${reachable})`;
}

const toStderr = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** The primary of `relay serve --workers N`: the store's lock and housekeeping here, HTTP in the workers. */
async function serveGroup(options: ServeOptions, json: boolean): Promise<void> {
  const leader = await operate(() => startRelayLeader({ ...options, env: process.env }));
  let group: WorkerGroup;
  try {
    group = await startWorkerGroup(options.workers, leader.metrics.registry, toStderr);
  } catch (error) {
    await leader.close();
    throw new CliError((error as Error).message);
  }
  settleOnceServing();
  const stopped = stopSignal();
  const reachable = reachableUrl(group.url);
  printResult(
    json,
    {
      listening: group.url,
      reachable: reachable ?? group.url,
      fingerprint: leader.fingerprint,
      epoch: leader.epoch,
      metrics: group.metricsUrl,
      workers: options.workers,
    },
    `agentmbx relay listening on ${group.url} fingerprint ${leader.fingerprint} epoch ${leader.epoch} workers ${options.workers}${reachableNote(reachable)}`,
  );
  if (group.metricsUrl !== null) process.stderr.write(`agentmbx relay: metrics on ${group.metricsUrl}/metrics\n`);
  const failure = await Promise.race([stopped.then(() => null), group.failed]);
  await group.stop();
  await leader.close();
  if (failure !== null) throw new CliError(`the relay stopped: ${failure}`);
  printStopped(json);
}

/** One worker of a group: serves HTTP on the store its primary holds, and exits with the primary. */
async function serveAsWorker(options: ServeOptions, requestLog: Logger): Promise<void> {
  exitWithPrimary(toStderr);
  // answers the primary's questions for this worker's figures from the start, so no scrape waits on it
  const groupMetrics = joinGroupMetrics();
  const service = await operate(() => startRelayService({ ...options, env: process.env, requestLog, role: 'worker' }));
  service.metrics.exposeGroup(groupMetrics.exposeTo(service.metrics.registry));
  settleOnceServing();
  const stopped = stopSignal();
  reportReady(service.url, service.metricsUrl);
  await stopped;
  await service.close();
  await new Promise<void>((resolve) => {
    requestLog.flush(() => resolve());
  });
  // the IPC channel to the primary would keep this process alive
  process.exit(0);
}

export function keygen(flags: { json?: boolean }): void {
  const { privateKey, fingerprint } = generateRelayKeyText();
  if (flags.json === true) {
    printJson({ private_key: privateKey, fingerprint });
    return;
  }
  process.stdout.write(`${privateKey}\n`);
  process.stderr.write(`fingerprint ${fingerprint}\n`);
}

export async function backup(file: string, flags: { storeDir?: string; keep?: string }): Promise<void> {
  const keep = flags.keep === undefined ? undefined : positiveInteger(flags.keep, '--keep', 100_000);
  const receipt = await operate(() => backupRelayStore({ storeDir: storeDirOf(flags), file, ...(keep === undefined ? {} : { keep }) }));
  printJson(receipt);
  if (receipt.ops_log_error !== undefined)
    process.stderr.write(`agentmbx: the backup is good, but the operations log could not record it: ${receipt.ops_log_error}\n`);
}

export async function restore(file: string, flags: { storeDir?: string }): Promise<void> {
  const receipt = await operate(() => restoreRelayStore({ storeDir: storeDirOf(flags), file, env: process.env }));
  printJson(receipt);
  process.stderr.write('restored: start the relay; hosts see the new epoch, senders re-push and receivers pull again\n');
}

export async function rotateEpoch(flags: { storeDir?: string; store?: string; json?: boolean }): Promise<void> {
  const rotation = await operate(() => rotateEpochOffline({ storeDir: storeDirOf(flags), store: storeOf(flags) }));
  printResult(flags.json, { from: rotation.from, to: rotation.to }, `epoch rotated: ${rotation.from} -> ${rotation.to}`);
}

function logLine(entry: StoredOpsLogEntry): string {
  const detail = Object.entries(entry.detail)
    .filter(([, value]) => value !== null && typeof value !== 'object')
    .map(([key, value]) => `${key}=${String(value)}`)
    .join(' ');
  return `${new Date(entry.at).toISOString()} ${entry.kind} ${detail}`.trimEnd();
}

export async function showLog(flags: { storeDir?: string; store?: string; json?: boolean; limit?: string }, defaultLimit: number): Promise<void> {
  const limit = flags.limit === undefined ? defaultLimit : positiveInteger(flags.limit, '--limit', MAX_OPS_LOG_ENTRIES);
  const entries = await operate(() => readRelayStoreOpsLog(storeOf(flags), limit));
  if (flags.json === true) printJson(entries);
  else process.stdout.write(entries.length === 0 ? 'the operations log is empty\n' : `${entries.map(logLine).join('\n')}\n`);
}
