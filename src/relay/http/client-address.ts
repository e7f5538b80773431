// The client address that enrolment rate limits count (design §2). Behind a trusted proxy, only
// the entry that proxy appended is trustworthy: the rightmost X-Forwarded-For entry, or
// Cloudflare's CF-Connecting-IP. Earlier XFF entries are written by the client.
import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import type { TrustProxy } from '../config.ts';

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

/** The 8 groups of an IPv6 address (a trailing dotted IPv4 part counts as two), as numbers. */
function ipv6Groups(address: string): number[] {
  const parts = (text: string): string[] => (text === '' ? [] : text.split(':'));
  const width = (groups: string[]): number => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const [head = '', tail] = address.split('::');
  const left = parts(head);
  const right = tail === undefined ? [] : parts(tail);
  const filled = [...left, ...Array<string>(8 - width(left) - width(right)).fill('0'), ...right];
  return filled.flatMap((g) => (g.includes('.') ? [0, 0] : [Number.parseInt(g, 16)]));
}

/**
 * The key one client is counted under: an IPv4 address (also written IPv4-mapped or with a
 * port), or the /64 prefix of an IPv6 address, since one IPv6 client holds a whole /64 and could
 * otherwise take a fresh budget from each of its addresses.
 */
export function rateKey(address: string): string {
  const bare = address
    .replace(/^\[(.*)\](:\d+)?$/, '$1')
    .replace(/^(\d+\.\d+\.\d+\.\d+):\d+$/, '$1')
    .replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  if (mapped !== undefined && isIPv4(mapped)) return mapped;
  if (isIPv6(bare))
    return `${ipv6Groups(bare)
      .slice(0, 4)
      .map((g) => g.toString(16))
      .join(':')}::/64`;
  return bare;
}

export function clientAddress(request: IncomingMessage, trust: TrustProxy): string {
  const socket = request.socket.remoteAddress ?? 'unknown';
  if (trust === 'xff') {
    const entries = (headerText(request.headers['x-forwarded-for']) ?? '')
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
    return entries.at(-1) ?? socket;
  }
  if (trust === 'cloudflare') {
    const cf = headerText(request.headers['cf-connecting-ip'])?.trim();
    return cf !== undefined && cf !== '' ? cf : socket;
  }
  return socket;
}
