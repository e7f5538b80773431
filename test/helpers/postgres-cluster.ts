// A throwaway PostgreSQL cluster: `initdb` into a temporary directory, then `postgres` on a free
// loopback port, run in a process group of its own so that one kill ends the postmaster and every
// backend. Used by the tests (through postgres-test-cluster.ts, which ties it to node:test) and by
// `npm run bench`; it imports nothing from node:test so the bench can use it as it is.
//
// initdb and postgres refuse to run as root: as root the cluster runs as the `postgres` user (the
// spawn's uid/gid), and the directories it needs are handed to that user.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import pg from 'pg';

/** How long the postmaster may take to accept connections after it was started. */
export const CLUSTER_START_DEADLINE_MS = 60_000;
/** How long a fast shutdown may take before the process group is killed. */
export const CLUSTER_STOP_DEADLINE_MS = 20_000;
/** Ports tried when another process takes the free port between the probe and the postmaster's bind. */
const PORT_ATTEMPTS = 3;
/** The postmaster's stderr kept for an error message. */
const LOG_TAIL_CHARS = 4_000;

const TOOLS = ['initdb', 'postgres'] as const;

export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` (trust authentication on loopback) */
  url(database?: string): string;
  port: number;
  /** `postgres --version` */
  version: string;
  /** the postmaster's pid, which leads the cluster's process group */
  pid: number;
  /** what another process needs to attach to it */
  address: ClusterAddress;
  /** creates a database (through the pg client) and returns its URL */
  createDatabase(name: string): Promise<string>;
  /** fast shutdown, then the directory is removed; the process group is killed if it hangs */
  stop(): Promise<void>;
}

export type ClusterStart = { available: true; cluster: PostgresCluster } | { available: false; reason: string };

export interface ClusterOptions {
  /** server settings passed as `-c name=value` (defaults: fsync and synchronous_commit on) */
  settings?: Record<string, string>;
}

/** Settings of a cluster nobody kills (the conformance run's): commits need not reach the disk. */
export const UNSYNCED_SETTINGS: Readonly<Record<string, string>> = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' };

/** What another process needs to use a running cluster (attachedPostgresCluster). */
export interface ClusterAddress {
  port: number;
  pid: number;
  version: string;
  /** whether the cluster syncs its commits (a new database is then copied through the WAL, else as files: faster) */
  synced: boolean;
}

/** Where a PostgreSQL program is: a Debian /usr/lib/postgresql/<v>/bin, else the PATH; null if nowhere. */
export function findPostgresTool(name: string): string | null {
  const dir = searchDirs().find((candidate) => existsSync(join(candidate, name)));
  return dir === undefined ? null : join(dir, name);
}

/** The directory holding both initdb and postgres. */
function findPostgresBin(): string | null {
  return searchDirs().find((dir) => TOOLS.every((tool) => existsSync(join(dir, tool)))) ?? null;
}

function searchDirs(): string[] {
  const candidates: string[] = [];
  const debianRoot = '/usr/lib/postgresql';
  if (existsSync(debianRoot)) {
    for (const version of readdirSync(debianRoot).sort((a, b) => Number(b) - Number(a))) candidates.push(join(debianRoot, version, 'bin'));
  }
  candidates.push(...(process.env['PATH'] ?? '').split(delimiter).filter((dir) => dir !== ''));
  return candidates;
}

/** The uid/gid the cluster runs as: ours, or the postgres user's when we are root. */
function clusterOwner(): { uid: number; gid: number } | null {
  if (userInfo().uid !== 0) return null;
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Starts a cluster, or says why none can run here (no binaries, or initdb failed). */
const NOT_INSTALLED = 'PostgreSQL is not installed (no initdb and postgres in /usr/lib/postgresql/*/bin or on the PATH)';

/** Why no throwaway cluster can start on this machine, or null when it can. */
export function postgresMissing(): string | null {
  return findPostgresBin() === null ? NOT_INSTALLED : null;
}

export async function startPostgresCluster(options: ClusterOptions = {}): Promise<ClusterStart> {
  const bin = findPostgresBin();
  if (bin === null) return { available: false, reason: NOT_INSTALLED };
  const owner = clusterOwner();
  const root = mkdtempSync(join(tmpdir(), 'agentmbx-pg-'));
  const data = join(root, 'data');
  const socketDir = join(root, 'sock');
  mkdirSync(socketDir);
  if (owner !== null) for (const path of [root, socketDir]) chownSync(path, owner.uid, owner.gid);
  const asOwner = owner ?? {};
  let version: string;
  try {
    version = execFileSync(join(bin, 'postgres'), ['--version']).toString().trim();
    execFileSync(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync'], { ...asOwner, stdio: 'pipe' });
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    return { available: false, reason: `PostgreSQL is installed but initdb failed: ${firstLine(error)}` };
  }
  const settings = { fsync: 'on', synchronous_commit: 'on', dynamic_shared_memory_type: 'mmap', ...options.settings };
  let lastFailure = '';
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt += 1) {
    const port = await freePort();
    const args = [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      socketDir,
      '-c',
      'listen_addresses=127.0.0.1',
      ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ];
    const child = spawn(join(bin, 'postgres'), args, { ...asOwner, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    process.on('exit', killGroup);
    const ready = await waitReady(child);
    if (ready === null) {
      return { available: true, cluster: runningCluster(child, port, version, root, killGroup, settings.fsync !== 'off') };
    }
    killGroup();
    process.off('exit', killGroup);
    lastFailure = ready;
  }
  rmSync(root, { recursive: true, force: true });
  return { available: false, reason: `PostgreSQL is installed but a throwaway cluster did not start: ${lastFailure}` };
}

/** null once the postmaster accepts connections, else why it did not. */
function waitReady(child: ChildProcess): Promise<string | null> {
  return new Promise((resolve) => {
    let log = '';
    const timer = setTimeout(() => finish(`not ready after ${CLUSTER_START_DEADLINE_MS} ms: ${log.slice(-LOG_TAIL_CHARS)}`), CLUSTER_START_DEADLINE_MS);
    const onExit = (code: number | null, signal: string | null): void => finish(`postgres exited (${code ?? signal}): ${log.slice(-LOG_TAIL_CHARS)}`);
    const onData = (chunk: string): void => {
      log = (log + chunk).slice(-LOG_TAIL_CHARS);
      if (log.includes('database system is ready to accept connections')) finish(null);
    };
    function finish(result: string | null): void {
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stderr?.off('data', onData);
      // keep draining the log so a chatty server never blocks on a full pipe
      child.stderr?.resume();
      resolve(result);
    }
    child.once('exit', onExit);
    child.stderr?.setEncoding('utf8').on('data', onData);
  });
}

function clusterUrl(port: number): (database?: string) => string {
  return (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
}

/** CREATE DATABASE `name`; FILE_COPY, which checkpoints, only where nothing syncs. */
async function createDatabaseIn(url: (database?: string) => string, name: string, synced: boolean): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new TypeError(`not a plain database name: ${name}`);
  const client = new pg.Client({ connectionString: url() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name} STRATEGY ${synced ? 'WAL_LOG' : 'FILE_COPY'}`);
  } finally {
    await client.end();
  }
  return url(name);
}

/** A cluster another process started and will stop (its ClusterAddress): databases are made in it, stop() leaves it running. */
export function attachedPostgresCluster(address: ClusterAddress): PostgresCluster {
  const url = clusterUrl(address.port);
  return {
    url,
    port: address.port,
    version: address.version,
    pid: address.pid,
    address,
    createDatabase: (name) => createDatabaseIn(url, name, address.synced),
    stop: () => Promise.resolve(),
  };
}

function runningCluster(child: ChildProcess, port: number, version: string, root: string, killGroup: () => void, synced: boolean): PostgresCluster {
  const url = clusterUrl(port);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  let stopping: Promise<void> | null = null;
  return {
    url,
    port,
    version,
    pid: child.pid as number,
    address: { port, pid: child.pid as number, version, synced },
    createDatabase: (name) => createDatabaseIn(url, name, synced),
    stop() {
      stopping ??= (async () => {
        // SIGINT is PostgreSQL's fast shutdown: backends end, shared memory is released
        try {
          process.kill(child.pid as number, 'SIGINT');
        } catch {
          /* already gone */
        }
        const timer = setTimeout(killGroup, CLUSTER_STOP_DEADLINE_MS);
        await exited;
        clearTimeout(timer);
        killGroup();
        process.off('exit', killGroup);
        rmSync(root, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

function firstLine(error: unknown): string {
  const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
  return (stderr !== undefined && stderr !== '' ? stderr : (error as Error).message).split('\n')[0] ?? '';
}
