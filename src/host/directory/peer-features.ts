// What a peer said it supports beyond protocol §5: the `features` of its GET /v1/status (or of its
// directory mail), kept in peer_links and read back here.
import { hasControlCharacters } from '../../protocol/validate.ts';
import type { HostNode } from '../core/node.ts';

/** Most features kept of a peer's status, and the longest one. */
export const FEATURES_MAX = 32;
export const FEATURE_MAX_CHARS = 64;

/** The `features` of a status answer (hostile input): short strings only, at most FEATURES_MAX. */
export function readFeatures(x: unknown): string[] {
  if (!Array.isArray(x)) return [];
  return x
    .filter((f): f is string => typeof f === 'string' && f.length > 0 && f.length <= FEATURE_MAX_CHARS && !hasControlCharacters(f))
    .slice(0, FEATURES_MAX);
}

/** The features a peer's stored status named (empty while unknown). */
export function peerFeatures(node: HostNode, host: string): string[] {
  const stored = node.store.peerLinks.get(host)?.features;
  return stored == null ? [] : readFeatures(JSON.parse(stored));
}
