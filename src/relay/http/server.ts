// The relay's HTTP face (protocol.md §3): routes, hop verification, client address, body caps,
// enrolment rate limits and status codes. Thin: parse, call the core, answer JSON.
import cluster from 'node:cluster';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ENROL_BODY_MAX_BYTES, MAX_RATE_ADDRESSES, type RelayConfig } from '../config.ts';
import type { RelayCore } from '../core/relay-core.ts';
import { badHop, type HopHeaders } from '../core/hop-auth.ts';
import { EncodedJson } from '../core/encoded-json.ts';
import { DENY_BODY_MAX_BYTES } from '../core/hosted.ts';
import { RelayError } from '../core/relay-error.ts';
import { RateWindow } from '../../common/rate-window.ts';
import type { Enrolment } from '../store/relay-store.ts';
import { StoreClosedError, StoreDiskError, StoreOverloadedError, type StoreDiskFault } from '../store/errors.ts';
import { clientAddress, rateKey } from './client-address.ts';

type Method = 'GET' | 'POST';
type Handler = (input: RouteInput) => Promise<unknown>;

interface RouteInput {
  request: FastifyRequest;
  /** the parsed JSON body (undefined for GET) */
  body: unknown;
  query: Record<string, string | undefined>;
  /** the signed caller; set on hop routes, null on the hop-optional info route */
  caller: Enrolment | null;
}

interface RouteSpec {
  method: Method;
  url: string;
  hop: 'required' | 'optional' | 'none';
  /** counts against the per-address enrolment budget (challenge, enrol, rotate share it) */
  enrolmentRate?: boolean;
  bodyLimit?: number;
  handler: Handler;
}

function requireCaller(caller: Enrolment | null): Enrolment {
  if (caller === null) throw badHop();
  return caller;
}

function routes(core: RelayCore): RouteSpec[] {
  const small = ENROL_BODY_MAX_BYTES;
  return [
    { method: 'GET', url: '/v2/relay/info', hop: 'optional', handler: ({ caller }) => core.info(caller) },
    { method: 'POST', url: '/v1/relay/challenge', hop: 'none', enrolmentRate: true, bodyLimit: small, handler: async ({ body }) => core.challenge(body) },
    { method: 'POST', url: '/v1/relay/enrol', hop: 'none', enrolmentRate: true, bodyLimit: small, handler: ({ body }) => core.enrol(body) },
    { method: 'POST', url: '/v2/relay/rotate', hop: 'none', enrolmentRate: true, bodyLimit: small, handler: ({ body }) => core.rotate(body) },
    { method: 'POST', url: '/v2/relay/items', hop: 'required', handler: ({ caller, body }) => core.push(requireCaller(caller), body) },
    { method: 'GET', url: '/v2/relay/items', hop: 'required', handler: ({ caller, query }) => core.pull(requireCaller(caller), query) },
    { method: 'POST', url: '/v2/relay/ack', hop: 'required', handler: ({ caller, body }) => core.ack(requireCaller(caller), body) },
    { method: 'POST', url: '/v2/relay/senders', hop: 'required', handler: ({ caller, body }) => core.publishSenderList(requireCaller(caller), body) },
    { method: 'POST', url: '/v2/relay/enc-key', hop: 'required', handler: ({ caller, body }) => core.publishEncAdV2(requireCaller(caller), body) },
    { method: 'GET', url: '/v2/relay/enc-key', hop: 'required', handler: ({ query }) => core.lookupEncAdByKey(query['pubkey']) },
    { method: 'POST', url: '/v1/relay/enc-key', hop: 'required', handler: ({ caller, body }) => core.publishEncAdV1(requireCaller(caller), body) },
    { method: 'GET', url: '/v1/relay/enc-key', hop: 'required', handler: ({ caller, query }) => core.lookupEncAdByName(requireCaller(caller), query['host']) },
    { method: 'POST', url: '/v1/relay/messages', hop: 'required', handler: ({ caller, body }) => core.pushV1(requireCaller(caller), body) },
    { method: 'GET', url: '/v1/relay/messages', hop: 'required', handler: ({ caller, query }) => core.pullV1(requireCaller(caller), query['after']) },
    { method: 'POST', url: '/v1/relay/ack', hop: 'required', handler: ({ caller, body }) => core.ackV1(requireCaller(caller), body) },
    ...(core.context.hosted === null ? [] : [
      { method: 'POST', url: '/v2/relay/admin/deny', hop: 'none', bodyLimit: DENY_BODY_MAX_BYTES, handler: ({ request, body }) => core.deny(header(request, 'authorization'), body) } satisfies RouteSpec,
    ]),
  ];
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function hopHeaders(request: FastifyRequest): HopHeaders {
  return { host: header(request, 'x-mbx-host'), key: header(request, 'x-mbx-key'), ts: header(request, 'x-mbx-ts'), sig: header(request, 'x-mbx-sig') };
}

/** Whether the request tries a hop at all: without one, no store transaction is spent on it. */
function carriesHop(headers: HopHeaders): boolean {
  return headers.ts !== undefined && headers.sig !== undefined;
}

function parseQuery(url: string): Record<string, string | undefined> {
  const search = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  const query: Record<string, string | undefined> = {};
  for (const [key, value] of new URLSearchParams(search)) query[key] ??= value;
  return query;
}

function parseBody(raw: string): unknown {
  if (raw === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new RelayError(400, 'request body is not valid JSON', 'BAD_JSON');
  }
}

function sendError(reply: FastifyReply, err: RelayError): FastifyReply {
  return reply.code(err.status).send(err.body());
}

/** Seconds a client is told to wait before it retries a write the relay's disk refused. */
export const DISK_RETRY_AFTER_SECONDS = 30;

/**
 * What a client is told when the disk refused its request (README "What a client can get back"): a
 * full disk is 507 and heals once space is freed; an I/O error or a failed sync is 503 (a failed
 * sync heals only with a restart). Always retryable: items of a push commit one by one, so some may
 * have been accepted before the disk refused; their retry is a `duplicate` with the first seq.
 */
const DISK_REFUSALS: Record<StoreDiskFault, { status: number; error: string; code: string }> = {
  full: { status: 507, error: 'the relay\'s disk is full: try again later', code: 'STORE_FULL' },
  io: { status: 503, error: 'the relay\'s disk failed a write: try again later', code: 'STORE_IO' },
  sync: { status: 503, error: 'the relay\'s disk failed to sync: try again later', code: 'STORE_SYNC_FAILED' },
};

/** Node's HTTP-layer error codes that have a more fitting status than 400. */
const CLIENT_ERROR_ANSWERS = new Map<string | undefined, { status: string; error: string }>([
  ['HPE_HEADER_OVERFLOW', { status: '431 Request Header Fields Too Large', error: 'request headers too large' }],
  ['HPE_CHUNK_EXTENSIONS_OVERFLOW', { status: '413 Payload Too Large', error: 'request body too large' }],
  ['ERR_HTTP_REQUEST_TIMEOUT', { status: '408 Request Timeout', error: 'the request took too long to arrive' }],
]);

/** Writes a JSON refusal straight to a socket that no Fastify reply owns, and closes it. */
function endWithJson(socket: Duplex, status: string, error: string): void {
  if (!socket.writable) return;
  const body = JSON.stringify({ error });
  socket.end(`HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** Answers HTTP-layer refusals (malformed request line or headers, timeouts) as JSON too (protocol.md §7.18). */
function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  const { status, error: message } = CLIENT_ERROR_ANSWERS.get(error.code) ?? { status: '400 Bad Request', error: 'malformed HTTP request' };
  endWithJson(socket, status, message);
}

/** The operator's view (metrics, logs, health: observability.ts), kept out of the routes. */
export interface HttpObserver {
  /** adds its hooks and routes to the app */
  install(app: FastifyInstance): void;
  /** a relay route's 200 answer (push outcomes, enrolments) */
  answered(route: string, answer: unknown): void;
}

export function buildRelayHttp(core: RelayCore, config: RelayConfig, observer?: HttpObserver): FastifyInstance {
  // Node's own refusal of a request without Host is an empty 400: the relay checks Host itself, below.
  // the workers of a relay group share one log: each one's request ids carry its worker id
  const reqIdPrefix = cluster.isWorker ? `w${cluster.worker?.id ?? 0}-req-` : 'req-';
  let requests = 0;
  const genReqId = (): string => `${reqIdPrefix}${(requests = (requests + 1) % Number.MAX_SAFE_INTEGER).toString(36)}`;
  const app = Fastify({ logger: false, bodyLimit: config.max_body_bytes, clientErrorHandler, return503OnClosing: true, http: { requireHostHeader: false }, genReqId });
  // HTTP/1.1 requires Host (RFC 9112 §3.2); the refusal is JSON like every other answer (protocol.md §7.18).
  app.addHook('onRequest', async (request, reply) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) return reply.code(400).send({ error: 'missing Host header' });
    return undefined;
  });
  // A connection whose request was in flight when closing began would otherwise stay open (keep-alive)
  // until its idle timeout and hold the shutdown for over a minute: answer it, then close it.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  // Without a listener Node drops a CONNECT without a word; the relay is no proxy and says so.
  app.server.on('connect', (_request, socket: Duplex) => endWithJson(socket, '405 Method Not Allowed', 'method not allowed'));
  const enrolmentRate = new RateWindow(config.enrol_per_minute, MAX_RATE_ADDRESSES);

  // Bodies arrive as raw bytes whatever their content type: the hop signs them byte for byte.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.setErrorHandler((error: Error & { code?: string; statusCode?: number }, _request, reply) => {
    if (error instanceof RelayError) return sendError(reply, error);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.code(413).send({ error: 'request body too large' });
    if (error instanceof StoreDiskError) {
      const { status, error: message, code } = DISK_REFUSALS[error.fault];
      return reply.code(status).header('retry-after', String(DISK_RETRY_AFTER_SECONDS)).send({ error: message, code });
    }
    // A full transaction queue or a store closing for shutdown is temporary: the client retries.
    if (error instanceof StoreOverloadedError || error instanceof StoreClosedError) {
      return reply.code(503).header('retry-after', '1').send({ error: 'the relay is busy: try again shortly' });
    }
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) return reply.code(status).send({ error: 'malformed request' });
    app.log.error(error);
    return reply.code(500).send({ error: 'internal error' });
  });
  // Any method a route does not take lands here (also TRACE, PROPFIND…): a known path answers 405.
  app.setNotFoundHandler((request, reply) => {
    const methods = known.get((request.raw.url ?? '').split('?', 1)[0] ?? '');
    if (methods === undefined) return reply.code(404).send({ error: 'not found' });
    return reply.code(405).header('allow', [...methods].join(', ')).send({ error: 'method not allowed' });
  });
  observer?.install(app);

  const known = new Map<string, Set<string>>();
  for (const spec of routes(core)) {
    known.set(spec.url, (known.get(spec.url) ?? new Set()).add(spec.method));
    app.route({
      method: spec.method,
      url: spec.url,
      ...(spec.bodyLimit === undefined ? {} : { bodyLimit: spec.bodyLimit }),
      handler: async (request, reply) => {
        if (spec.enrolmentRate === true && !enrolmentRate.take(rateKey(clientAddress(request.raw, config.trust_proxy)), core.context.nowMs())) {
          return sendError(reply, new RelayError(429, 'too many enrolment requests from this address: wait a minute', 'RATE'));
        }
        const raw = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '';
        const path = request.raw.url ?? request.url;
        const hop = hopHeaders(request);
        let caller = spec.hop === 'none' || !carriesHop(hop) ? null : await core.caller(hop, { method: spec.method, path, rawBody: raw });
        if (caller !== null) {
          // a hosted relay also wants the caller's access token (docs/hosted-relay.md "Sessions")
          const refusal = await core.sessionRefusal(caller, header(request, 'authorization'));
          if (refusal !== null && spec.hop === 'required') return sendError(reply, refusal);
          if (refusal !== null) caller = null;
        }
        if (spec.hop === 'required' && caller === null) return sendError(reply, badHop());
        const answer = await spec.handler({ request, body: parseBody(raw), query: parseQuery(path), caller });
        observer?.answered(spec.url, answer);
        if (answer instanceof EncodedJson) return reply.code(200).type('application/json; charset=utf-8').send(answer.bytes);
        return reply.code(200).send(answer);
      },
    });
  }
  return app;
}
