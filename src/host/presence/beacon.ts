// Presence beacons (protocol §5, POST /v1/presence): `{v:1, seq, port, addrs, version}`, signed by
// the LAN hop. This host sends its own (the addresses it can be reached at), and reads a peer's as
// hostile input into candidate base URLs, which the daemon probes before it moves any pin.
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { isPlainObject } from '../../protocol/validate.ts';
import { isValidPort } from '../../common/port.ts';
import { normalizeAddr } from '../core/peer-addr.ts';

/** Most addresses a beacon carries (sent and read), and the longest one read. */
export const BEACON_ADDRS_MAX = 16;
export const BEACON_ADDR_MAX_CHARS = 200;
/** Longest `version` read from a beacon. */
export const BEACON_VERSION_MAX_CHARS = 64;

export interface Beacon {
  v: 1;
  seq: number;
  port: number;
  addrs: string[];
  version: string;
}

/** The addresses this host can be reached at: its bind address, or (bound to all) its interfaces' non-internal ones. */
export function ownAddresses(bind: string): string[] {
  if (bind !== '0.0.0.0' && bind !== '::') return [bind];
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) {
      if (info.internal || (info.family === 'IPv6' && info.address.toLowerCase().startsWith('fe80:'))) continue;
      if (!out.includes(info.address)) out.push(info.address);
    }
  }
  return out.slice(0, BEACON_ADDRS_MAX);
}

/** A peer's beacon body, or null when it is not one. */
export function readBeacon(body: unknown): Beacon | null {
  if (!isPlainObject(body) || body.v !== 1) return null;
  const { seq, port, addrs, version } = body;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1 || typeof port !== 'number' || !isValidPort(port) || port === 0) return null;
  if (!Array.isArray(addrs) || addrs.length > BEACON_ADDRS_MAX || !addrs.every((a) => typeof a === 'string' && a.length <= BEACON_ADDR_MAX_CHARS)) return null;
  if (version !== undefined && (typeof version !== 'string' || version.length > BEACON_VERSION_MAX_CHARS)) return null;
  return { v: 1, seq, port, addrs: addrs as string[], version: typeof version === 'string' ? version : '' };
}

/** The base URL of `host` (an address a socket or a beacon named) at `port`. */
export function baseUrl(host: string, port: number): string | null {
  const bare = host.startsWith('::ffff:') && isIP(host.slice(7)) === 4 ? host.slice(7) : host;
  if (isIP(bare) === 6) return bare.toLowerCase().startsWith('fe80:') ? null : `http://[${bare}]:${port}`;
  if (isIP(bare) === 4 || /^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$/.test(bare)) return `http://${bare}:${port}`;
  return null;
}

/** One address of a beacon as a base URL: a URL, host:port, or a bare address with the beacon's port. */
function candidateOf(addr: string, port: number): string | null {
  try {
    if (/^[a-z]+:\/\//i.test(addr)) return normalizeAddr(addr);
    if (isIP(addr) === 0 && /^[^:]+:\d+$/.test(addr)) return normalizeAddr(addr);
  } catch {
    return null;
  }
  return baseUrl(addr, port);
}

/** The candidate base URLs of a beacon, the address it came from first; deduplicated, at most BEACON_ADDRS_MAX. */
export function beaconCandidates(beacon: Beacon, remoteAddress: string | undefined): string[] {
  const all = [remoteAddress === undefined ? null : baseUrl(remoteAddress, beacon.port), ...beacon.addrs.map((a) => candidateOf(a, beacon.port))];
  return [...new Set(all.filter((c): c is string => c !== null))].slice(0, BEACON_ADDRS_MAX);
}
