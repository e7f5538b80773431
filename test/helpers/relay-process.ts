// The real relay as a child process (`agentmbx relay serve`), for restarts and SIGKILL drills.
import assert from 'node:assert/strict';
import { CLI_MAIN, spawnNode, type Child } from './processes.ts';
import { waitUntil } from './wait.ts';

export interface RelayProcess {
  child: Child;
  url: string;
  fingerprint: string;
  epoch: string;
  /** the wall clock the child uses, for clients of it */
  clock: { nowMs: () => number };
}

const READY = /agentmbx relay listening on (\S+) fingerprint (\S+) epoch (\S+)/;
const SERVING = /agentmbx relay: worker pid (\d+) serving/g;

export interface SpawnRelayOptions {
  failpoint?: string;
  env?: NodeJS.ProcessEnv;
  args?: string[];
  netns?: string;
  /** `--workers` (default 1: a single relay process) */
  workers?: number;
}

/**
 * Starts `relay serve` on an ephemeral port; `failpoint` arms MBX_FAILPOINT in the child (and in its
 * workers); `args` are added to its command line (a later --bind or --port wins); `netns` runs it in
 * that network namespace.
 */
export async function spawnRelay(dir: string, options: SpawnRelayOptions = {}): Promise<RelayProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, MBX_RELAY_KEY: '', ...options.env };
  delete env['MBX_RELAY_KEY'];
  if (options.env?.['MBX_RELAY_KEY'] !== undefined) env['MBX_RELAY_KEY'] = options.env['MBX_RELAY_KEY'];
  if (options.failpoint !== undefined) env['MBX_FAILPOINT'] = options.failpoint;
  else delete env['MBX_FAILPOINT'];
  const child = spawnNode(
    [CLI_MAIN, 'relay', 'serve', '--store-dir', dir, '--port', '0', '--bind', '127.0.0.1', '--workers', String(options.workers ?? 1), ...(options.args ?? [])],
    { env, netns: options.netns },
  );
  const line = await child.waitForLine(READY);
  const [, url, fingerprint, epoch] = READY.exec(line) as RegExpExecArray;
  return { child, url: url as string, fingerprint: fingerprint as string, epoch: epoch as string, clock: { nowMs: () => Date.now() } };
}

/** The pids of the workers a relay group has reported serving so far (in order; a replacement comes later). */
export function servingWorkers(relay: { child: Child }): number[] {
  return [...relay.child.stderr().matchAll(SERVING)].map((match) => Number(match[1]));
}

/**
 * `call` never gets its answer because the relay died at its armed fault point (SIGKILL). In a
 * group the worker serving the call died; the primary is then killed with the whole group, as a
 * machine crash would, so that the caller can start the next relay on the store. The call is
 * awaited last: the primary may still hold the connection it handed the dead worker, and then
 * only the group's end closes it (before, the call waited out the client's 30 s timeout).
 */
export async function diesAtFailpoint(relay: RelayProcess, call: Promise<unknown>): Promise<void> {
  const unanswered = assert.rejects(call, 'the answer never comes');
  if (servingWorkers(relay).length > 0) {
    await waitUntil('the worker to die at the fault point', 60_000, async () =>
      /worker pid \d+ died \(signal SIGKILL\)/.test(relay.child.stderr()) ? null : relay.child.stderr().slice(-300),
    );
    relay.child.kill('SIGKILL');
  }
  assert.equal(await relay.child.exited, 'SIGKILL');
  await unanswered;
}
