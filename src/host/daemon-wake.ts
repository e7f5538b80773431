// The local signal that wakes the daemon at once: `send` (the CLI, an agent's MCP server) connects to
// a unix socket in the home that the daemon listens on, and the connection itself is the whole
// message: the daemon ticks now, so the message leaves in milliseconds rather than at the next tick.
// Best effort both ways: without a daemon, or where the socket cannot be made (a home whose path is
// too long for a socket address), the tick sends the message as before.
import { unlinkSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

/** The socket's file in the home. */
export const DAEMON_WAKE_SOCKET = 'daemon.sock';
/** Longest a sender waits for the daemon to take its wake-up. */
export const WAKE_CONNECT_TIMEOUT_MS = 500;
/** Longest socket path the platforms take (Linux 108 bytes with the terminating NUL, macOS 104). */
const MAX_SOCKET_PATH_BYTES = 103;

function socketPath(home: string): string | null {
  const path = join(home, DAEMON_WAKE_SOCKET);
  return process.platform !== 'win32' && Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES ? path : null;
}

export interface WakeListener {
  close(): Promise<void>;
}

/**
 * The daemon's end: `onWake` runs for every connection. Only the daemon calls it, under the daemon
 * lock (daemon-lock.ts), so a socket file left by one that died is its own to replace. null when no
 * socket can be made here.
 */
export async function listenForWakes(home: string, onWake: () => void): Promise<WakeListener | null> {
  const path = socketPath(home);
  if (path === null) return null;
  try {
    unlinkSync(path);
  } catch {
    // none left behind
  }
  const server: Server = createServer((socket) => {
    socket.on('error', () => {});
    socket.end();
    onWake();
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(path, () => resolve(true));
  });
  if (!listening) return null;
  server.unref();
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  };
}

/** The sender's end: tells a running daemon of `home` to tick now; resolves once told, or when there is no daemon to tell. */
export function wakeDaemon(home: string): Promise<void> {
  const path = socketPath(home);
  if (path === null) return Promise.resolve();
  return new Promise((resolve) => {
    const socket = connect(path);
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
    const timer = setTimeout(done, WAKE_CONNECT_TIMEOUT_MS);
    socket.once('connect', done);
    socket.once('error', done);
  });
}
