// Answers written straight to a socket that no HTTP response owns (a request line or headers Node
// could not parse), by the relay and by a host's LAN server alike.
import type { Duplex } from 'node:stream';

/** Writes `{"error": error}` with `status` ("400 Bad Request") and closes the socket; a socket that can no longer be written is destroyed. */
export function endWithJson(socket: Duplex, status: string, error: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ error });
  socket.end(`HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}
