// The relay under test: `agentmbx relay serve` in a child process on a temporary store, so that its
// RSS and disk writes are its own (read from /proc) and the load generator has the other core.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface RelayChild {
  url: string;
  pid: number;
  /** bytes this process caused to be written to storage so far (Linux /proc/<pid>/io write_bytes) */
  writeBytes(): number;
  /** peak resident set size so far, bytes (/proc/<pid>/status VmHWM) */
  peakRss(): number;
  /** CPU time (user + system) the relay used so far, all its threads, ms (/proc/<pid>/stat, 100 ticks a second) */
  cpuMs(): number;
  /** CPU time of the relay's main thread (the event loop, which also runs SQLite), ms */
  mainThreadCpuMs(): number;
  /** commit groups so far and the transactions they held, from the relay's /metrics */
  groups(): Promise<{ count: number; members: number }>;
  stop(): Promise<void>;
}

const READY = /agentmbx relay listening on (\S+)/;
/** The heap flags the Dockerfile sets (NODE_OPTIONS): the relay is measured as it is deployed. */
export const DEPLOYED_NODE_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=192'];
/** The environment the Dockerfile sets for the relay's memory (glibc malloc arenas). */
export const DEPLOYED_ENV = { MALLOC_ARENA_MAX: '2' };
const CLI_MAIN = join(import.meta.dirname, '..', 'src', 'cli', 'main.ts');

function procField(path: string, pattern: RegExp): number {
  const match = pattern.exec(readFileSync(path, 'utf8'));
  return match === null ? Number.NaN : Number(match[1]);
}

function statCpuMs(path: string): number {
  // fields after the command name: state is the 1st, utime the 12th, stime the 13th
  const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export async function startRelayChild(dir: string, settings: Record<string, number>): Promise<RelayChild> {
  const config = join(dir, 'bench-relay.json');
  writeFileSync(config, JSON.stringify(settings));
  const env: NodeJS.ProcessEnv = { ...process.env, ...DEPLOYED_ENV };
  delete env['MBX_RELAY_KEY'];
  delete env['MBX_FAILPOINT'];
  // BENCH_RELAY_NODE_ARGS: extra node flags for the relay, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  const nodeArgs = [...DEPLOYED_NODE_FLAGS, ...(process.env['BENCH_RELAY_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '')];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, '--disable-warning=ExperimentalWarning', CLI_MAIN, 'relay', 'serve',
    '--store-dir', join(dir, 'store'), '--port', '0', '--bind', '127.0.0.1', '--config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => { child.once('exit', () => resolve()); });
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => { const m = READY.exec(line); if (m !== null) resolve(m[1] as string); });
    child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.once('exit', (code) => reject(new Error(`the relay exited with ${code} before listening`)));
  });
  const pid = child.pid as number;
  return {
    url,
    pid,
    writeBytes: () => procField(`/proc/${pid}/io`, /^write_bytes:\s+(\d+)/m),
    peakRss: () => procField(`/proc/${pid}/status`, /^VmHWM:\s+(\d+) kB/m) * 1024,
    cpuMs: () => statCpuMs(`/proc/${pid}/stat`),
    mainThreadCpuMs: () => statCpuMs(`/proc/${pid}/task/${pid}/stat`),
    async groups() {
      const text = await (await fetch(`${url}/metrics`)).text();
      const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
      return { count: value('agentmbx_commit_group_size_count'), members: value('agentmbx_commit_group_size_sum') };
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
