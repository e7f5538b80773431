// The real relay as a child process (`agentmbx relay serve`), for restarts and SIGKILL drills.
import { CLI_MAIN, spawnNode, type Child } from './processes.ts';

export interface RelayProcess {
  child: Child;
  url: string;
  fingerprint: string;
  epoch: string;
  /** the wall clock the child uses, for clients of it */
  clock: { nowMs: () => number };
}

const READY = /agentmbx relay listening on (\S+) fingerprint (\S+) epoch (\S+)/;

/**
 * Starts `relay serve` on an ephemeral port; `failpoint` arms MBX_FAILPOINT in the child; `args` are
 * added to its command line (a later --bind or --port wins); `netns` runs it in that network namespace.
 */
export async function spawnRelay(dir: string, options: { failpoint?: string; env?: NodeJS.ProcessEnv; args?: string[]; netns?: string } = {}): Promise<RelayProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, MBX_RELAY_KEY: '', ...options.env };
  delete env['MBX_RELAY_KEY'];
  if (options.env?.['MBX_RELAY_KEY'] !== undefined) env['MBX_RELAY_KEY'] = options.env['MBX_RELAY_KEY'];
  if (options.failpoint !== undefined) env['MBX_FAILPOINT'] = options.failpoint;
  else delete env['MBX_FAILPOINT'];
  const child = spawnNode([CLI_MAIN, 'relay', 'serve', '--store-dir', dir, '--port', '0', '--bind', '127.0.0.1', ...(options.args ?? [])], { env, netns: options.netns });
  const line = await child.waitForLine(READY);
  const [, url, fingerprint, epoch] = READY.exec(line) as RegExpExecArray;
  return { child, url: url as string, fingerprint: fingerprint as string, epoch: epoch as string, clock: { nowMs: () => Date.now() } };
}
