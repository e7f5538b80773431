// The client address that enrolment rate limits count (design §2). Behind a trusted proxy, only
// the entry that proxy appended is trustworthy: the rightmost X-Forwarded-For entry, or
// Cloudflare's CF-Connecting-IP. Earlier XFF entries are written by the client.
import type { IncomingMessage } from 'node:http';
import type { TrustProxy } from '../config.ts';

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

export function clientAddress(request: IncomingMessage, trust: TrustProxy): string {
  const socket = request.socket.remoteAddress ?? 'unknown';
  if (trust === 'xff') {
    const entries = (headerText(request.headers['x-forwarded-for']) ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
    return entries.at(-1) ?? socket;
  }
  if (trust === 'cloudflare') {
    const cf = headerText(request.headers['cf-connecting-ip'])?.trim();
    return cf !== undefined && cf !== '' ? cf : socket;
  }
  return socket;
}
