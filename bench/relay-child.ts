// The relay under test: `agentmbx relay serve` in a child process on a temporary store, started as an
// operator starts it (bin/agentmbx: the image's memory settings, Node's compile cache), so that its
// RSS and disk writes are its own (read from /proc) and the load generator has the other core. With
// `--workers N` the figures are summed over the primary and its workers (peak RSS is per process).
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** One process of the relay under test, its resident set size now and at its peak. */
export interface ProcessRss {
  pid: number;
  role: 'relay' | 'primary' | 'worker';
  /** VmRSS now, bytes */
  rssBytes: number;
  /** VmHWM, bytes */
  peakRssBytes: number;
  /** Pss now (proportionalSetBytes), bytes */
  pssBytes: number;
}

/**
 * The proportional set size of process `pid` (/proc/<pid>/smaps_rollup Pss): its private pages plus
 * each page it shares with n processes counted 1/n. Summed over a group of processes it counts every
 * page once, so it is the group's honest total where VmRSS counts the Node binary's code, which every
 * process maps and the kernel keeps once, in each of them.
 */
export function proportionalSetBytes(pid: number): number {
  return statOrZero(`/proc/${pid}/smaps_rollup`, (path) => procField(path, /^Pss:\s+(\d+) kB/m) * 1024);
}

/**
 * The resident memory of a group counted once: every process's private pages, plus the shared pages
 * of the process that has most (summing VmRSS counts the Node binary's code, which every process maps
 * and the kernel keeps once, in each process: about 58 MB each here). From /proc/<pid>/smaps_rollup.
 */
export function residentOnceBytes(pids: number[]): number {
  let privateBytes = 0;
  let sharedMax = 0;
  for (const pid of pids) {
    const rollup = statOrZero(`/proc/${pid}/smaps_rollup`, (path) => {
      const text = readFileSync(path, 'utf8');
      const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
      privateBytes += (kb('Private_Clean') + kb('Private_Dirty')) * 1024;
      return (kb('Shared_Clean') + kb('Shared_Dirty')) * 1024;
    });
    sharedMax = Math.max(sharedMax, rollup);
  }
  return privateBytes + sharedMax;
}

export interface RelayChild {
  url: string;
  pid: number;
  /** every process of the relay: the child, and with --workers N > 1 its workers */
  pids(): number[];
  /** RSS now (VmRSS) and at its peak so far (VmHWM) of each process */
  peakRssPerProcess(): ProcessRss[];
  /** the resident memory of all its processes, pages shared between them counted once (residentOnceBytes) */
  residentOnceBytes(): number;
  /** bytes this process caused to be written to storage so far (Linux /proc/<pid>/io write_bytes) */
  writeBytes(): number;
  /** the largest peak resident set size of its processes so far, bytes (/proc/<pid>/status VmHWM) */
  peakRss(): number;
  /** resident set size now, summed over its processes, bytes (/proc/<pid>/status VmRSS) */
  rssBytes(): number;
  /** proportional set size now, summed over its processes, bytes (proportionalSetBytes) */
  pssBytes(): number;
  /** pulls held open now, in all its processes (the relay's /metrics agentmbx_held_pulls) */
  heldPulls(): Promise<number>;
  /** the pulls the relay holds at most (/metrics agentmbx_held_pulls_limit: each process's cap, from its heap) */
  heldPullsLimit(): Promise<number>;
  /** CPU time (user + system) the relay used so far, all its processes and threads, ms (/proc/<pid>/stat, 100 ticks a second) */
  cpuMs(): number;
  /** CPU time of the relay's main threads (the event loops, which also run SQLite), ms */
  mainThreadCpuMs(): number;
  /** commit groups so far and the transactions they held, from the relay's /metrics (with workers: the one that answers) */
  groups(): Promise<{ count: number; members: number }>;
  /** CPU time (user + system) of the database server so far, ms: only a relay on a throwaway PostgreSQL cluster has one */
  serverCpuMs?(): number;
  stop(): Promise<void>;
}

/** Limits out of the way: the bench measures throughput, not quotas or rate limits. */
export const BENCH_SETTINGS = {
  pushes_per_minute: Number.MAX_SAFE_INTEGER,
  // the held-pull fleet enrols 20,000 hosts from one address, two calls each
  enrol_per_minute: 1_000_000,
  max_queue_items: 1_000_000,
  max_queue_bytes: 1e12,
  max_sender_items: 1_000_000,
  max_sender_bytes: 1e12,
};

const READY = /agentmbx relay listening on (\S+)/;
const WORKER = /agentmbx relay: worker pid (\d+) serving/g;
/** The heap flags the Dockerfile and bin/agentmbx set (NODE_OPTIONS): the relay is measured as it is deployed. */
export const DEPLOYED_NODE_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=192'];
/** The environment the Dockerfile and bin/agentmbx set for the relay's memory (glibc malloc arenas). */
export const DEPLOYED_ENV = { MALLOC_ARENA_MAX: '2' };
/** `agentmbx` as installed: it execs the pinned Node, so the child's pid is the relay's. */
const CLI_BIN = join(import.meta.dirname, '..', 'bin', 'agentmbx');

function procField(path: string, pattern: RegExp): number {
  const match = pattern.exec(readFileSync(path, 'utf8'));
  return match === null ? Number.NaN : Number(match[1]);
}

/** CPU time (user + system) of process `pid` so far, all its threads, ms. */
export function processCpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/** CPU time (user + system) so far of process `pid` and its live children, ms (a PostgreSQL postmaster and its backends, each in a session of its own). */
export function processAndChildrenCpuMs(pid: number): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    total += statOrZero(`/proc/${entry}/stat`, (path) => {
      // fields after the command name: the parent's pid is the 2nd
      const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return Number(entry) === pid || Number(fields[1]) === pid ? statCpuMs(path) : 0;
    });
  }
  return total;
}

function statCpuMs(path: string): number {
  // fields after the command name: state is the 1st, utime the 12th, stime the 13th
  const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function statOrZero(path: string, read: (path: string) => number): number {
  try {
    return read(path);
  } catch {
    return 0; // a process that is gone adds nothing more
  }
}

/** `extraArgs` go to `relay serve` (e.g. `--store postgres://…`). */
export async function startRelayChild(dir: string, settings: Record<string, number>, workers = 1, extraArgs: string[] = []): Promise<RelayChild> {
  const config = join(dir, 'bench-relay.json');
  writeFileSync(config, JSON.stringify(settings));
  // BENCH_RELAY_NODE_ARGS: extra node flags for the relay, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  const nodeArgs = [...DEPLOYED_NODE_FLAGS, ...(process.env['BENCH_RELAY_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '')];
  const env: NodeJS.ProcessEnv = { ...process.env, ...DEPLOYED_ENV, NODE_OPTIONS: nodeArgs.join(' ') };
  delete env['MBX_RELAY_KEY'];
  delete env['MBX_FAILPOINT'];
  const child: ChildProcess = spawn(
    CLI_BIN,
    ['relay', 'serve', '--store-dir', join(dir, 'store'), '--port', '0', '--bind', '127.0.0.1', '--config', config, '--workers', String(workers), ...extraArgs],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
  });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      const m = READY.exec(line);
      if (m !== null) resolve(m[1] as string);
      // the relay's error lines (pino level 50 and 60) are shown: a figure measured beside errors is no figure
      if (/"level":(50|60)\b/.test(line)) process.stderr.write(`relay: ${line}\n`);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      process.stderr.write(chunk);
    });
    child.once('exit', (code) => reject(new Error(`the relay exited with ${code} before listening`)));
  });
  const pid = child.pid as number;
  const workerPids = (): number[] => [...stderr.matchAll(WORKER)].map((m) => Number(m[1]));
  const pids = (): number[] => [pid, ...workerPids()];
  const sum = (read: (p: number) => number): number => pids().reduce((total, p) => total + read(p), 0);
  const peakRssPerProcess = (): ProcessRss[] =>
    pids().map((p) => ({
      pid: p,
      role: p !== pid ? 'worker' : workers > 1 ? 'primary' : 'relay',
      rssBytes: statOrZero(`/proc/${p}/status`, (path) => procField(path, /^VmRSS:\s+(\d+) kB/m) * 1024),
      peakRssBytes: statOrZero(`/proc/${p}/status`, (path) => procField(path, /^VmHWM:\s+(\d+) kB/m) * 1024),
      pssBytes: proportionalSetBytes(p),
    }));
  /** figures of one /metrics scrape, by name */
  const scrape = async (...names: string[]): Promise<number[]> => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return names.map((name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN));
  };
  return {
    url,
    pid,
    pids,
    peakRssPerProcess,
    residentOnceBytes: () => residentOnceBytes(pids()),
    writeBytes: () => sum((p) => statOrZero(`/proc/${p}/io`, (path) => procField(path, /^write_bytes:\s+(\d+)/m))),
    peakRss: () => Math.max(...peakRssPerProcess().map((p) => p.peakRssBytes)),
    rssBytes: () => sum((p) => statOrZero(`/proc/${p}/status`, (path) => procField(path, /^VmRSS:\s+(\d+) kB/m) * 1024)),
    pssBytes: () => sum(proportionalSetBytes),
    heldPulls: async () => (await scrape('agentmbx_held_pulls'))[0] as number,
    heldPullsLimit: async () => (await scrape('agentmbx_held_pulls_limit'))[0] as number,
    cpuMs: () => sum((p) => statOrZero(`/proc/${p}/stat`, statCpuMs)),
    mainThreadCpuMs: () => sum((p) => statOrZero(`/proc/${p}/task/${p}/stat`, statCpuMs)),
    async groups() {
      const [count, members] = await scrape('agentmbx_commit_group_size_count', 'agentmbx_commit_group_size_sum');
      return { count: count as number, members: members as number };
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
