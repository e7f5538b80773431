// Driving real hosts through the CLI: homes, daemons on 127.0.0.1, pairing.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, spawnCli, tempDir, type Child } from '../helpers/processes.ts';

/** Upper bound of one end-to-end test: a hang fails the test instead of the whole run. */
export const E2E_TIMEOUT_MS = 240_000;

export interface CliHost {
  name: string;
  env: NodeJS.ProcessEnv;
  daemon: Child | null;
  url: string;
  /** where its CLI and daemon run: a network namespace (default: this one) and the daemon's listen address */
  place: HostPlace;
}

export interface HostPlace {
  netns?: string;
  bind: string;
}

export const LOOPBACK: HostPlace = { bind: '127.0.0.1' };

export async function cli(host: CliHost, args: string[]): Promise<string> {
  const r = await runCli(args, host.env, host.place.netns);
  assert.equal(r.code, 0, `agentmbx ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

export async function cliJson<T>(host: CliHost, args: string[]): Promise<T> {
  return JSON.parse(await cli(host, [...args, '--json'])) as T;
}

export async function newCliHost(
  name: string,
  agents: string[],
  place: HostPlace = LOOPBACK,
  home = join(tempDir(`mbx-e2e-${name}-`), 'home'),
): Promise<CliHost> {
  const host: CliHost = { name, env: { MBX_HOME: home }, daemon: null, url: '', place };
  await cli(host, ['init', '--host', name, '--port', '0', '--bind', place.bind]);
  for (const agent of agents) await cli(host, ['agents', 'add', agent]);
  return host;
}

/** Starts the daemon and waits for its ready line. */
export async function startCliDaemon(host: CliHost, extraEnv: NodeJS.ProcessEnv = {}): Promise<Child> {
  const child = spawnCli(['daemon', '--port', host.url === '' ? '0' : new URL(host.url).port, '--bind', host.place.bind], {
    env: { ...process.env, ...host.env, ...extraEnv },
    netns: host.place.netns,
  });
  const line = await child.waitForLine(/listening on http:\/\//);
  host.url = /listening on (\S+)/.exec(line)?.[1] ?? '';
  host.daemon = child;
  return child;
}

/** A shows a token, B joins with it. */
export async function pairCli(a: CliHost, b: CliHost): Promise<void> {
  const { token } = await cliJson<{ token: string }>(a, ['pair']);
  await cli(b, ['join', a.url, token]);
}

/** Every file under the host's home with a hash of its bytes: equal snapshots mean nothing was written. */
export function homeSnapshot(host: CliHost): Record<string, string> {
  const home = host.env.MBX_HOME as string;
  const out: Record<string, string> = {};
  if (!existsSync(home)) return out;
  for (const name of readdirSync(home, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(home, name);
    if (statSync(path).isFile()) out[name] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return out;
}

/** The messages of `inbox --json` (its first page: up to 500, oldest first). */
export async function inboxMessages<T>(host: CliHost, agent: string): Promise<T[]> {
  return (await cliJson<{ messages: T[] }>(host, ['inbox', '--agent', agent, '--limit', '500'])).messages;
}
