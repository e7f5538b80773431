// The address other machines reach this one at, for a server listening on every interface
// (0.0.0.0 names no machine a peer can dial).
import { networkInterfaces } from 'node:os';

/** The first non-internal IPv4 address (127.0.0.1 when there is none). */
export function lanAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) if (info.family === 'IPv4' && !info.internal) return info.address;
  }
  return '127.0.0.1';
}

/** For a URL on every interface (http://0.0.0.0:7374), the same URL on this machine's LAN address; else null. */
export function reachableUrl(url: string): string | null {
  const parsed = new URL(url);
  if (parsed.hostname !== '0.0.0.0' && parsed.hostname !== '[::]') return null;
  parsed.hostname = lanAddress();
  return parsed.origin;
}
