// Canonical JSON (RFC 8785 / JCS) as JavaScript produces it: protocol.md §1.
// Everything signed in the protocol is signed over this form.
import { createRequire } from 'node:module';

// The package is CommonJS whose typings claim an ES default export; load it the CommonJS way.
const canonicalize = createRequire(import.meta.url)('canonicalize') as (input: unknown) => string | undefined;

/** Deepest nesting we agree to canonicalize; hostile input nested deeper is refused, never a crash. */
export const MAX_CANONICAL_DEPTH = 64;

export class CanonicalJsonError extends Error {}

/** Canonical JSON text of `value`; throws CanonicalJsonError for non-finite numbers, cycles or deep nesting. */
export function canonicalJson(value: unknown): string {
  checkDepth(value, 0);
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (err) {
    throw new CanonicalJsonError(err instanceof Error ? err.message : 'value cannot be canonicalized');
  }
  if (text === undefined) throw new CanonicalJsonError('value cannot be canonicalized');
  return text;
}

function checkDepth(value: unknown, depth: number): void {
  if (value === null || typeof value !== 'object') return;
  if (depth >= MAX_CANONICAL_DEPTH) throw new CanonicalJsonError('value is nested too deeply');
  for (const child of Object.values(value)) checkDepth(child, depth + 1);
}
