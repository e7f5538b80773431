// The relay hop (protocol.md §2): headers x-mbx-host, x-mbx-key, x-mbx-ts, x-mbx-sig; the signature
// covers method, the request target with its query string (v2), the timestamp and the raw body.
import { canonicalJson } from './canonical.ts';
import { verifySignature, type SigningKey } from './keys.ts';

export const HOP_MAX_SKEW_MS = 5 * 60 * 1000;

export interface RelayHopRequest {
  method: string;
  /** the request target exactly as sent; for /v1/* calls, the query string is dropped before signing */
  path: string;
  /** body text byte for byte; '' for a GET */
  rawBody: string;
}

export interface RelayHopHeaders {
  'x-mbx-host': string;
  'x-mbx-key': string;
  'x-mbx-ts': string;
  'x-mbx-sig': string;
}

/** The path a hop signs: v1 routes are signed without their query string (a kept v1 weakness, G8). */
export function signedHopPath(path: string): string {
  return path.startsWith('/v1/') ? (path.split('?', 1)[0] ?? path) : path;
}

export function relayHopString(method: string, path: string, ts: string, rawBody: string): string {
  const upper = method.toUpperCase();
  const signedPath = signedHopPath(path);
  return canonicalJson({ method: upper, path: signedPath, ts, body: `${upper}:${signedPath}:${ts}:${rawBody}` });
}

export function signRelayHop(request: RelayHopRequest, hostName: string, key: SigningKey, nowMs: number): RelayHopHeaders {
  const ts = String(nowMs);
  return {
    'x-mbx-host': hostName,
    'x-mbx-key': key.publicKey,
    'x-mbx-ts': ts,
    'x-mbx-sig': key.sign(relayHopString(request.method, request.path, ts, request.rawBody)),
  };
}

/** Whether a hop's `x-mbx-ts` is a finite number of milliseconds within ±5 minutes of `nowMs`. */
export function relayHopTimeIsFresh(ts: unknown, nowMs: number): boolean {
  if (typeof ts !== 'string' || ts.trim() === '') return false;
  const value = Number(ts);
  return Number.isFinite(value) && Math.abs(value - nowMs) <= HOP_MAX_SKEW_MS;
}

/** Verifies a hop signature by `publicKey` (the caller's enrolled key). Time is checked separately. */
export function verifyRelayHopSignature(publicKey: string, request: RelayHopRequest, ts: string, sig: unknown): boolean {
  let text: string;
  try {
    text = relayHopString(request.method, request.path, ts, request.rawBody);
  } catch {
    return false;
  }
  return verifySignature(publicKey, text, sig);
}
