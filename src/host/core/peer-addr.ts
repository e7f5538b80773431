// A peer's or relay's address as the owner or a peer gives it (`host:port` or a URL) → the base URL
// every call uses: shared by the CLI, pairing, presence, the LAN transport and the relay pin.
import { HostError } from './host-error.ts';

/** `host:port` or a URL → the base URL of a peer (`http://host:port`); a bad one is a HostError `invalid`. */
export function normalizeAddr(addr: string): string {
  const withScheme = /^[a-z]+:\/\//i.test(addr) ? addr : `http://${addr}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new HostError(`bad address "${addr}": use host:port or http://host:port`, 'invalid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new HostError(`bad address "${addr}": use http:// or https://`, 'invalid');
  return `${url.protocol}//${url.host}`;
}
