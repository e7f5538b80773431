// Shared by the host's CLI files: open the host in $MBX_HOME, turn known failures into one-line
// CliErrors with their exit code, parse durations and ports.
import { CliError } from './cli-error.ts';
import type { ExitName } from './exit-codes.ts';
import { HostError, type FailureKind } from '../host/host-error.ts';
import { defaultHome } from '../host/identity.ts';
import { closeNode, openNode, type HostNode } from '../host/node.ts';
import { StoreError } from '../host/store/database.ts';

const EXIT_OF_KIND: Record<FailureKind, ExitName> = { 'not-found': 'NOT_FOUND', 'not-paired': 'NOT_PAIRED', unreachable: 'UNREACHABLE' };

/** The host's own errors become CliErrors with the exit code of their kind; others pass through. */
export function asCliError(err: unknown): unknown {
  if (err instanceof HostError) return new CliError(err.message, err.kind === null ? 'FAILURE' : EXIT_OF_KIND[err.kind]);
  if (err instanceof StoreError) return new CliError(err.message, 'STORAGE');
  return err;
}

/** Opens the host, runs `fn`, closes the host; known failures become one-line errors. */
export async function withNode<T>(fn: (node: HostNode) => T | Promise<T>): Promise<T> {
  let node: HostNode;
  try {
    node = openNode(defaultHome());
  } catch (err) {
    throw asCliError(err);
  }
  try {
    return await fn(node);
  } catch (err) {
    throw asCliError(err);
  } finally {
    closeNode(node);
  }
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `10m`, `30s`, `2h`, `1d`, `500ms`: the unit is required (a bare `10` is ambiguous). */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (m === null) throw new CliError(`bad duration "${text}": a number with a unit (ms, s, m, h, d), e.g. 30s, 10m, 2h`, 'USAGE');
  return Number(m[1]) * (UNITS[m[2] as string] ?? 1);
}

export function parsePort(text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliError(`bad port "${text}"`, 'USAGE');
  return port;
}
