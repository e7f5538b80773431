// The relay's listening ports are bound first, before the writer lock, the store or the epoch are
// touched: a start that cannot serve (port busy, no permission) fails without changing the store,
// and nothing can take the port between that check and the relay serving on it. Until the relay
// is ready the port answers 503 "starting", so a request that arrives early is told to retry.
import type { RequestListener, Server } from 'node:http';
import { nodeHttp } from '../../common/node-http.ts';

/** Seconds a client that arrived while the relay was starting is told to wait before it retries. */
export const STARTING_RETRY_AFTER_SECONDS = 1;

export interface BoundPort {
  /** the listening server (its address gives the port when 0 was asked for) */
  readonly server: Server;
  /** http://host:port as clients reach it */
  readonly url: string;
  /** Fastify's `serverFactory`: keeps the app's handler for open() and returns the bound server */
  adopt(handler: RequestListener): Server;
  /** from now on requests go to the adopted handler */
  open(): void;
  /** whether close() was called: an answer still going out should say `connection: close` */
  readonly closing: boolean;
  /** stops accepting, closes idle connections, and resolves once every connection has ended */
  close(): Promise<void>;
}

function answerStarting(_request: Parameters<RequestListener>[0], response: Parameters<RequestListener>[1]): void {
  const body = JSON.stringify({ error: 'the relay is starting: try again shortly' });
  response
    .writeHead(503, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'retry-after': String(STARTING_RETRY_AFTER_SECONDS),
      connection: 'close',
    })
    .end(body);
}

/** A port the relay cannot listen on, said in one line naming the address and the setting to change. */
export class PortBindError extends Error {
  constructor(address: string, setting: string, cause: NodeJS.ErrnoException) {
    const message =
      cause.code === 'EADDRINUSE'
        ? `${address} is already in use (another relay or program listens there): change ${setting}`
        : `cannot listen on ${address} (${cause.code ?? cause.message}): change ${setting}`;
    super(message, { cause });
  }
}

/**
 * Binds `host:port` (0: any free port) or throws PortBindError; `setting` names what sets the
 * address (e.g. "--metrics-bind"), for the operator. `shared`: a worker of a relay group, whose
 * listen goes through node:cluster to the group's one handle (exclusive would bind its own).
 */
export async function bindPort(host: string, port: number, setting: string, options: { shared?: boolean } = {}): Promise<BoundPort> {
  // HTTP/1.1 without Host is refused by the relay itself, as JSON (server.ts); Node's own refusal is an empty 400.
  const server = nodeHttp.createServer({ requireHostHeader: false }, answerStarting);
  // what Fastify sets on a server it creates itself: idle keep-alive connections last 72 s, no
  // overall request deadline (a slow link may take its time over a large push)
  server.keepAliveTimeout = 72_000;
  server.requestTimeout = 0;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  await new Promise<void>((resolve, reject) => {
    const refused = (error: NodeJS.ErrnoException): void => reject(new PortBindError(`${shownHost}:${port}`, setting, error));
    server.once('error', refused);
    server.listen({ host, port, exclusive: options.shared !== true }, () => {
      server.off('error', refused);
      resolve();
    });
  });
  const address = server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  let adopted: RequestListener | null = null;
  let closed: Promise<void> | null = null;
  return {
    server,
    url: `http://${shownHost}:${boundPort}`,
    adopt(handler) {
      adopted = handler;
      return server;
    },
    open() {
      if (adopted === null) throw new Error('no handler adopted for the bound port');
      server.off('request', answerStarting);
      server.on('request', adopted);
    },
    get closing() {
      return closed !== null;
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
      });
      return closed;
    },
  };
}

/**
 * Checks that `host:port` can be bound, then releases it: for a relay group's primary, whose
 * workers bind the port through node:cluster once it has started. Port 0 always binds.
 */
export async function probePort(host: string, port: number, setting: string): Promise<void> {
  if (port === 0) return;
  const probe = await bindPort(host, port, setting);
  await probe.close();
}
