// Child processes for integration tests, drills and end-to-end tests. Every child runs in its own
// process group; `killAll` (registered by `track`) kills whole groups, also when a test fails.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after } from 'node:test';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI_MAIN = join(REPO_ROOT, 'src', 'cli', 'main.ts');
/** The `agentmbx` command as installed: a shell script that execs the pinned Node. */
export const CLI_BIN = join(REPO_ROOT, 'bin', 'agentmbx');

const live = new Set<ChildProcess>();
// Groups started by another spawner (e.g. an SDK's transport through setsid), by leader pid.
const liveGroups = new Set<number>();

function killGroupOf(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is already gone
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (child.pid !== undefined) killGroupOf(child.pid, signal);
}

/** Kills every process group this test file started. */
export function killAll(): void {
  for (const child of live) killGroup(child);
  live.clear();
  for (const pid of liveGroups) killGroupOf(pid);
  liveGroups.clear();
}

/** Tracks a process group someone else spawned (its leader's pid): killed with the others; the return kills it now. */
export function trackGroup(pid: number): () => void {
  liveGroups.add(pid);
  return () => {
    liveGroups.delete(pid);
    killGroupOf(pid);
  };
}

// Registered when a test file loads this module, so the hook belongs to the file's root and runs
// after all its tests, whether they passed or not.
after(killAll);
process.on('exit', killAll);

export interface Child {
  process: ChildProcess;
  /** everything written to stdout so far */
  stdout(): string;
  stderr(): string;
  /** resolves with the first stdout line matching `pattern`; rejects if the process exits first */
  waitForLine(pattern: RegExp): Promise<string>;
  /** resolves with the exit code (or signal name) */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
}

/** Where a child runs: `netns` names a Linux network namespace (the child starts under `ip netns exec`). */
export interface NodeSpawnOptions extends SpawnOptions {
  netns?: string;
}

/** Spawns `node <args>` (the pinned Node running the tests) in a new process group. */
export function spawnNode(args: string[], options: NodeSpawnOptions = {}): Child {
  return spawnProcess([process.execPath, '--disable-warning=ExperimentalWarning', ...args], options);
}

/** Spawns the `agentmbx` command itself (bin/agentmbx) in a new process group. */
export function spawnCli(args: string[], options: NodeSpawnOptions = {}): Child {
  return spawnProcess([CLI_BIN, ...args], options);
}

/** Spawns `command` (file and arguments) in a new process group. */
export function spawnProcess(command: string[], options: NodeSpawnOptions = {}): Child {
  const { netns, ...spawnOptions } = options;
  // `ip netns exec` execs the command in place, so the group leader is node itself.
  const [file, ...argv] = netns === undefined ? command : ['ip', 'netns', 'exec', netns, ...command];
  const child = spawn(file as string, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    ...spawnOptions,
  });
  live.add(child);
  let out = '';
  let err = '';
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void; reject: (e: Error) => void }> = [];
  const exited = new Promise<number | string>((resolveExit) => {
    child.on('exit', (code, signal) => {
      live.delete(child);
      for (const w of waiters.splice(0)) w.reject(new Error(`process exited (${code ?? signal}) before printing ${w.pattern}; stderr: ${err.slice(-2000)}`));
      resolveExit(code ?? signal ?? -1);
    });
  });
  const check = (): void => {
    for (const w of [...waiters]) {
      const line = out.split('\n').find((l) => w.pattern.test(l));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    check();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  return {
    process: child,
    stdout: () => out,
    stderr: () => err,
    waitForLine(pattern) {
      return new Promise((res, rej) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          rej(new Error(`process already exited; stderr: ${err.slice(-2000)}`));
          return;
        }
        waiters.push({ pattern, resolve: res, reject: rej });
        check();
      });
    },
    exited,
    kill(signal = 'SIGKILL') {
      killGroup(child, signal);
    },
  };
}

/** Runs the real CLI to completion: `agentmbx <args>` (inside network namespace `netns` when given). */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}, netns?: string): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const child = spawnCli(args, { env: { ...process.env, ...env }, netns });
  const code = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

/** A fresh temporary directory, removed after the test file. */
export function tempDir(prefix = 'agentmbx-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
