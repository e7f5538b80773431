// The LAN hop between paired hosts (protocol.md §5): Ed25519 over four lines — METHOD, pathname
// without query, ISO timestamp, hex SHA-256 of the body — within ±5 minutes.
import { sha256Hex } from './hash.ts';
import { verifySignature, type SigningKey } from './keys.ts';
import { HOP_MAX_SKEW_MS } from './relay-hop.ts';

export interface LanHopHeaders {
  'x-mbx-host': string;
  'x-mbx-ts': string;
  'x-mbx-sig': string;
}

export function lanHopString(method: string, path: string, ts: string, rawBody: string): string {
  const pathname = path.split('?', 1)[0] ?? path;
  return [method.toUpperCase(), pathname, ts, sha256Hex(rawBody)].join('\n');
}

export function signLanHop(method: string, path: string, rawBody: string, hostName: string, key: SigningKey, nowMs: number): LanHopHeaders {
  const ts = new Date(nowMs).toISOString();
  return { 'x-mbx-host': hostName, 'x-mbx-ts': ts, 'x-mbx-sig': key.sign(lanHopString(method, path, ts, rawBody)) };
}

export function lanHopTimeIsFresh(ts: unknown, nowMs: number): boolean {
  if (typeof ts !== 'string') return false;
  const value = Date.parse(ts);
  return Number.isFinite(value) && Math.abs(value - nowMs) <= HOP_MAX_SKEW_MS;
}

export function verifyLanHopSignature(publicKey: string, method: string, path: string, ts: string, rawBody: string, sig: unknown): boolean {
  return verifySignature(publicKey, lanHopString(method, path, ts, rawBody), sig);
}
