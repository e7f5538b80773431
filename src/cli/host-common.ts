// Shared by the host's CLI files: open the host in $MBX_HOME, turn known failures into one-line
// CliErrors with their exit code.
import { CliError } from './cli-error.ts';
import type { ExitName } from './exit-codes.ts';
import { HostError, type FailureKind } from '../host/core/host-error.ts';
import { defaultHome } from '../host/core/identity.ts';
import type { HostNode } from '../host/core/node.ts';
import { closeNode, openNode } from '../host/open-node.ts';
import { StoreError } from '../host/store/database.ts';

const EXIT_OF_KIND: Record<FailureKind, ExitName> = { invalid: 'USAGE', 'not-found': 'NOT_FOUND', 'not-paired': 'NOT_PAIRED', unreachable: 'UNREACHABLE' };

/** The host's own errors become CliErrors with the exit code of their kind; others pass through. */
export function asCliError(err: unknown): unknown {
  if (err instanceof HostError) return new CliError(err.message, err.kind === null ? 'FAILURE' : EXIT_OF_KIND[err.kind], false, { cause: err });
  if (err instanceof StoreError) return new CliError(err.message, 'STORAGE', false, { cause: err });
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
