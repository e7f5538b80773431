// Answers written straight to a socket that no HTTP response owns (a request line or headers Node
// could not parse), by the relay and by a host's LAN server alike.
import { nodeHttp } from './node-http.ts';
import type { Duplex } from 'node:stream';

/** Writes `body` as JSON with `status` and any extra `headers`, then closes the socket; a socket that can no longer be written is destroyed. */
export function endWithJson(socket: Duplex, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const text = JSON.stringify(body);
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${nodeHttp.STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n` +
      `${extra}connection: close\r\n\r\n${text}`,
  );
}
