// How a client starts this agentmbx: the absolute path of its Node and of its entry file (a GUI
// client's PATH is thin: it may find neither `agentmbx` nor Node), and the host's home.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** src/cli/main.ts of this install, from this file's place. */
export const MAIN_SCRIPT = resolve(import.meta.dirname, '..', 'cli', 'main.ts');
/** bin/agentmbx of this install: runs its pinned Node, and keeps Node's compile cache for hooks. */
export const BIN_SCRIPT = resolve(import.meta.dirname, '..', '..', 'bin', 'agentmbx');
export const NODE_FLAGS = ['--disable-warning=ExperimentalWarning'] as const;

export interface Launch {
  node: string;
  main: string;
  bin: string;
  home: string;
}

export function thisLaunch(home: string): Launch {
  return { node: process.execPath, main: MAIN_SCRIPT, bin: BIN_SCRIPT, home: resolve(home) };
}

/** The MCP server's command and arguments. */
export function mcpCommand(launch: Launch, agent: string): { command: string; args: string[] } {
  return { command: launch.node, args: [...NODE_FLAGS, launch.main, 'mcp', '--agent', agent] };
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * A hook's shell command line (hooks run under a shell and have no env setting of their own). It
 * runs bin/agentmbx by its absolute path: the script finds its pinned Node itself and has Node
 * keep its compiled code between hook runs (a hook runs on every prompt).
 */
export function hookCommandLine(launch: Launch, client: string, event: string, agent: string): string {
  return [`MBX_HOME=${shellQuote(launch.home)}`, ...[launch.bin, 'hook', client, event, '--agent', agent].map(shellQuote)].join(' ');
}

/** What is wrong with a launch found in a client's config: paths that no longer exist, another agent. */
export function launchDrift(found: { command?: unknown; args?: unknown; env?: unknown }, agent: string | null): string[] {
  const problems: string[] = [];
  const args = Array.isArray(found.args) ? found.args.filter((a): a is string => typeof a === 'string') : [];
  if (typeof found.command !== 'string' || !existsSync(found.command)) problems.push(`its command ${String(found.command)} does not exist`);
  const script = args.find((a) => a.endsWith('main.ts') || a.endsWith('agentmbx'));
  if (script !== undefined && !existsSync(script)) problems.push(`${script} does not exist`);
  const named = args[args.indexOf('--agent') + 1];
  if (agent !== null && args.includes('--agent') && named !== agent) problems.push(`it is agent ${String(named)}, not ${agent}`);
  const env = found.env as Record<string, unknown> | undefined;
  const home = env?.['MBX_HOME'];
  if (typeof home === 'string' && !existsSync(home)) problems.push(`its MBX_HOME ${home} does not exist`);
  return problems;
}

/** The agent a launch runs as (`--agent NAME` in its arguments). */
export function launchAgent(args: unknown): string | null {
  if (!Array.isArray(args)) return null;
  const at = args.indexOf('--agent');
  return at >= 0 && typeof args[at + 1] === 'string' ? (args[at + 1] as string) : null;
}
