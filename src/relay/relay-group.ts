// A relay of several processes behind one port (`relay serve --workers N`, docs/design.md "Several
// relay processes"). The primary holds the store's writer lock for the group, runs the start-up
// check, the heartbeat and the sweeps (startRelayLeader) and forks N workers that serve HTTP on the
// shared store (startRelayService with role 'worker').
//
// The port is shared through node:cluster's round-robin: the primary owns the listening socket and
// hands each new connection to the next worker. Chosen over SO_REUSEPORT because it balances a
// few long keep-alive clients evenly (the kernel's hash may not), keeps connections waiting in the
// accept queue when a worker dies (a dead SO_REUSEPORT socket resets its own), and works on every
// platform Node runs on.
//
// A worker that dies is replaced; one that cannot stay up (MAX_WORKER_DEATHS in
// WORKER_DEATH_WINDOW_MS) stops the group. A worker whose primary is gone exits at once: the IPC
// channel closes however the primary died, so no worker outlives it.
import cluster, { type Worker } from 'node:cluster';
import type { Registry } from 'prom-client';
import { serveGroupMetrics } from './group-metrics.ts';
import { isWakeMessage, wakeMessage } from './core/pull-wakes.ts';

/** Worker deaths within WORKER_DEATH_WINDOW_MS beyond which the primary stops the group instead of replacing them. */
export const MAX_WORKER_DEATHS = 10;
export const WORKER_DEATH_WINDOW_MS = 60_000;

/**
 * The heap of each worker, as `npm start`, the Docker image and bin/agentmbx give a relay (8 MiB
 * semispaces: a pull page dies young; 192 MB of old space: docs/benchmark.md), unless the primary
 * was started with heap flags of its own; and MALLOC_ARENA_MAX=2 (glibc's arena per thread otherwise).
 */
export const RELAY_HEAP_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=192'] as const;
export const RELAY_MALLOC_ARENA_MAX = '2';

/** The execArgv and environment a worker is forked with: the primary's, with the relay's memory settings where the primary has none. */
export function workerMemorySettings(execArgv: readonly string[], env: NodeJS.ProcessEnv): { execArgv: string[]; env: NodeJS.ProcessEnv } {
  const hasHeap = [...execArgv, env['NODE_OPTIONS'] ?? ''].some((arg) => arg.includes('--max-old-space-size'));
  return {
    execArgv: hasHeap ? [...execArgv] : [...execArgv, ...RELAY_HEAP_FLAGS],
    env: { MALLOC_ARENA_MAX: env['MALLOC_ARENA_MAX'] ?? RELAY_MALLOC_ARENA_MAX },
  };
}

/** What a worker tells the primary once it serves. */
interface ReadyMessage {
  type: 'agentmbx-relay-ready';
  url: string;
  metricsUrl: string | null;
}

function isReady(message: unknown): message is ReadyMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'agentmbx-relay-ready';
}

export interface WorkerGroup {
  /** the relay's address, as the first worker to serve reported it */
  url: string;
  metricsUrl: string | null;
  /** resolves with a reason when the group can no longer serve (workers keep dying) */
  failed: Promise<string>;
  /** asks every worker to finish its requests and stop, and resolves once all have exited */
  stop(): Promise<void>;
}

/**
 * Forks `count` workers (this process must be the cluster primary) and resolves once every one
 * serves; their /metrics add `primaryMetrics` (group-metrics.ts). Rejects if a worker exits before it serves (its own error is on stderr).
 */
export async function startWorkerGroup(
  count: number,
  primaryMetrics: Registry,
  log: (line: string) => void,
  nowMs: () => number = Date.now,
): Promise<WorkerGroup> {
  cluster.schedulingPolicy = cluster.SCHED_RR;
  const memory = workerMemorySettings(process.execArgv, process.env);
  cluster.setupPrimary({ execArgv: memory.execArgv });
  serveGroupMetrics(primaryMetrics);
  let stopping = false;
  let first: ReadyMessage | null = null;
  const deaths: number[] = [];
  let fail: (reason: string) => void = () => {};
  const failed = new Promise<string>((resolve) => {
    fail = resolve;
  });
  const serving = new Set<Worker>();

  const fork = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork(memory.env);
      let ready = false;
      worker.on('message', (message: unknown) => {
        // items a worker committed: its siblings' held pulls for those keys read again
        if (isWakeMessage(message)) {
          sendWakeToWorkers(message.keys, worker);
          return;
        }
        if (!isReady(message) || ready) return;
        ready = true;
        first ??= message;
        serving.add(worker);
        log(`agentmbx relay: worker pid ${worker.process.pid} serving (${serving.size} of ${count})`);
        resolve();
      });
      worker.once('exit', (code, signal) => {
        serving.delete(worker);
        if (stopping) return;
        const how = signal === null ? `exit code ${code}` : `signal ${signal}`;
        if (!ready) {
          reject(new Error(`a relay worker stopped before it served (${how})`));
          return;
        }
        deaths.push(nowMs());
        while (deaths.length > 0 && (deaths[0] as number) <= nowMs() - WORKER_DEATH_WINDOW_MS) deaths.shift();
        if (deaths.length > MAX_WORKER_DEATHS) {
          fail(`${deaths.length} relay workers died within ${WORKER_DEATH_WINDOW_MS / 1000} s`);
          return;
        }
        log(`agentmbx relay: worker pid ${worker.process.pid} died (${how}): starting another`);
        fork().catch((error: unknown) => fail((error as Error).message));
      });
    });

  const stop = async (): Promise<void> => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
    await Promise.all(
      workers.map(
        (worker) =>
          new Promise<void>((resolve) => {
            worker.once('exit', () => resolve());
            worker.process.kill('SIGTERM');
          }),
      ),
    );
  };

  try {
    await Promise.all(Array.from({ length: count }, fork));
  } catch (error) {
    await stop();
    throw error;
  }
  const ready = first as ReadyMessage | null;
  if (ready === null) throw new Error('no relay worker reported its address');
  return { url: ready.url, metricsUrl: ready.metricsUrl, failed, stop };
}

/** In the primary: tells every live worker (but `except`) that items for `keys` committed (held pulls, core/pull-wakes.ts). */
export function sendWakeToWorkers(keys: string[], except?: Worker): void {
  const message = wakeMessage(keys);
  for (const worker of Object.values(cluster.workers ?? {})) {
    if (worker === undefined || worker === except || !worker.isConnected()) continue;
    // a worker that dies meanwhile loses only the news; its replacement's hosts pull again
    worker.send(message, (error: Error | null) => {
      void error;
    });
  }
}

/** In a worker: tells the primary it serves at `url`. */
export function reportReady(url: string, metricsUrl: string | null): void {
  const message: ReadyMessage = { type: 'agentmbx-relay-ready', url, metricsUrl };
  process.send?.(message);
}

/** In a worker: exits at once when the primary is gone (its IPC channel closed), whatever killed it. */
export function exitWithPrimary(log: (line: string) => void): void {
  process.once('disconnect', () => {
    log('agentmbx relay: the primary process is gone: this worker stops');
    process.exit(1);
  });
}
