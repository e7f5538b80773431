// Shared by the host's CLI files: open the host in $MBX_HOME, turn known failures into one-line
// CliErrors, parse durations, print JSON.
import { CliError } from './cli-error.ts';
import { AgentNameError } from '../host/agent-mail.ts';
import { HomeError } from '../host/home-files.ts';
import { defaultHome } from '../host/identity.ts';
import { MailboxError } from '../host/mailbox.ts';
import { closeNode, openNode, type HostNode } from '../host/node.ts';
import { PairError } from '../host/pairing.ts';
import { RouteError } from '../host/route.ts';
import { StoreError } from '../host/store/database.ts';
import { LanError } from '../host/transport/lan/client.ts';

const KNOWN_ERRORS = [HomeError, StoreError, RouteError, MailboxError, PairError, LanError];

export function asCliError(err: unknown): unknown {
  if (err instanceof AgentNameError) return new CliError(err.message, 2);
  if (KNOWN_ERRORS.some((E) => err instanceof E)) return new CliError((err as Error).message, 1, { cause: err });
  return err;
}

/** Opens the host in $MBX_HOME; a failure to is a one-line error. */
export function openHomeNode(): HostNode {
  try {
    return openNode(defaultHome());
  } catch (err) {
    throw asCliError(err);
  }
}

/** Opens the host, runs `fn`, closes the host; known failures become one-line errors. */
export async function withNode<T>(fn: (node: HostNode) => T | Promise<T>): Promise<T> {
  const node = openHomeNode();
  try {
    return await fn(node);
  } catch (err) {
    throw asCliError(err);
  } finally {
    closeNode(node);
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `10m`, `30s`, `2h`, `1d` or plain milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (m === null) throw new CliError(`bad duration "${text}": use e.g. 30s, 10m, 2h`, 2);
  return Number(m[1]) * (UNITS[m[2] ?? 'ms'] ?? 1);
}

export function parsePort(text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliError(`bad port "${text}"`, 2);
  return port;
}
