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
import { DENY_BODY_MAX_BYTES, DENY_RULES } from '../core/hosted.ts';
import { parseAckRequest } from '../../protocol/relay-api/ack.ts';
import { parseDenyRequest } from '../../protocol/relay-api/admin-deny.ts';
import { parseEncAdV1Request, parseEncAdV2Request, parseLookupByKey, parseLookupByName } from '../../protocol/relay-api/enc-key.ts';
import { parseChallengeRequest, parseEnrolRequest } from '../../protocol/relay-api/enrolment.ts';
import { clampWait, parsePullQuery } from '../../protocol/relay-api/pull.ts';
import { parsePushRequest } from '../../protocol/relay-api/push.ts';
import { Refusal, REFUSAL_HEADER, REFUSALS, takeParsed, type RefusalCode } from '../../protocol/relay-api/refusals.ts';
import { parseRotationRequest } from '../../protocol/relay-api/rotation.ts';
import { parseSenderListRequest } from '../../protocol/relay-api/senders.ts';
import { parseV1AckRequest, parseV1PullQuery, parseV1PushRequest } from '../../protocol/relay-api/v1-messages.ts';
import { RateWindow } from '../../common/rate-window.ts';
import { endWithJson } from '../../common/raw-http.ts';
import type { Enrolment, ReadPriority } from '../store/relay-store.ts';
import { StoreClosedError, StoreDiskError, StoreLockLostError, StoreOverloadedError, type StoreDiskFault } from '../store/errors.ts';
import type { BoundPort } from './bound-port.ts';
import { clientAddress, rateKey } from './client-address.ts';

type Method = 'GET' | 'POST';
type Handler = (input: RouteInput) => Promise<unknown>;

interface RouteInput {
  request: FastifyRequest;
  reply: FastifyReply;
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
  /** how soon the caller's lookup gets a store connection (ReadPriority; default 'ordinary') */
  lookupPriority?: (query: Record<string, string | undefined>) => ReadPriority;
  handler: Handler;
}

function requireCaller(caller: Enrolment | null): Enrolment {
  if (caller === null) throw badHop();
  return caller;
}

/**
 * The routes: each parses its request with the endpoint's parser of src/protocol/relay-api/
 * (a malformed one is refused there) and hands the core a typed request.
 */
function routes(core: RelayCore): RouteSpec[] {
  const small = ENROL_BODY_MAX_BYTES;
  const {
    config: { limits },
    epoch,
    nowMs,
  } = core.context;
  return [
    { method: 'GET', url: '/v2/relay/info', hop: 'optional', handler: ({ caller }) => core.info(caller) },
    {
      method: 'POST',
      url: '/v1/relay/challenge',
      hop: 'none',
      enrolmentRate: true,
      bodyLimit: small,
      handler: async ({ body }) => core.challenge(takeParsed(parseChallengeRequest(body))),
    },
    {
      method: 'POST',
      url: '/v1/relay/enrol',
      hop: 'none',
      enrolmentRate: true,
      bodyLimit: small,
      handler: ({ body }) => core.enrol(takeParsed(parseEnrolRequest(body))),
    },
    {
      method: 'POST',
      url: '/v2/relay/rotate',
      hop: 'none',
      enrolmentRate: true,
      bodyLimit: small,
      handler: ({ body }) => core.rotate(takeParsed(parseRotationRequest(body))),
    },
    {
      method: 'POST',
      url: '/v2/relay/items',
      hop: 'required',
      handler: ({ caller, body }) => core.push(requireCaller(caller), takeParsed(parsePushRequest(body, limits.max_batch))),
    },
    {
      method: 'GET',
      url: '/v2/relay/items',
      hop: 'required',
      // a pull that asks to wait is not in a hurry: thousands re-pulling at once must not delay pushes (read-slots.ts)
      lookupPriority: (query) => {
        const wait = clampWait(query.wait, limits.max_wait_s);
        return wait.ok && wait.value > 0 ? 'held' : 'ordinary';
      },
      handler: ({ caller, query, reply }) =>
        core.pull(
          requireCaller(caller),
          takeParsed(parsePullQuery(query, { epoch, maxPull: limits.max_pull, maxWaitS: limits.max_wait_s })),
          clientGone(reply),
        ),
    },
    { method: 'POST', url: '/v2/relay/ack', hop: 'required', handler: ({ caller, body }) => core.ack(requireCaller(caller), parseAckRequest(body, epoch)) },
    {
      method: 'POST',
      url: '/v2/relay/senders',
      hop: 'required',
      handler: ({ caller, body }) =>
        core.publishSenderList(requireCaller(caller), takeParsed(parseSenderListRequest(body, requireCaller(caller).hostPubkey, nowMs()))),
    },
    {
      method: 'POST',
      url: '/v2/relay/enc-key',
      hop: 'required',
      handler: ({ caller, body }) =>
        core.publishEncAdV2(requireCaller(caller), takeParsed(parseEncAdV2Request(body, requireCaller(caller).hostPubkey, nowMs()))),
    },
    { method: 'GET', url: '/v2/relay/enc-key', hop: 'required', handler: ({ query }) => core.lookupEncAdByKey(takeParsed(parseLookupByKey(query['pubkey']))) },
    {
      method: 'POST',
      url: '/v1/relay/enc-key',
      hop: 'required',
      handler: ({ caller, body }) => core.publishEncAdV1(requireCaller(caller), takeParsed(parseEncAdV1Request(body, requireCaller(caller)))),
    },
    {
      method: 'GET',
      url: '/v1/relay/enc-key',
      hop: 'required',
      handler: ({ caller, query }) => core.lookupEncAdByName(requireCaller(caller), takeParsed(parseLookupByName(query['host']))),
    },
    {
      method: 'POST',
      url: '/v1/relay/messages',
      hop: 'required',
      handler: ({ caller, body }) => core.pushV1(requireCaller(caller), takeParsed(parseV1PushRequest(body, limits.max_batch))),
    },
    {
      method: 'GET',
      url: '/v1/relay/messages',
      hop: 'required',
      handler: ({ caller, query }) => core.pullV1(requireCaller(caller), takeParsed(parseV1PullQuery(query))),
    },
    {
      method: 'POST',
      url: '/v1/relay/ack',
      hop: 'required',
      handler: ({ caller, body }) => core.ackV1(requireCaller(caller), takeParsed(parseV1AckRequest(body))),
    },
    ...(core.context.hosted === null
      ? []
      : [
          {
            method: 'POST',
            url: '/v2/relay/admin/deny',
            hop: 'none',
            bodyLimit: DENY_BODY_MAX_BYTES,
            handler: ({ request, body }) => core.deny(header(request, 'authorization'), parseDenyRequest(body, nowMs(), DENY_RULES)),
          } satisfies RouteSpec,
        ]),
  ];
}

/** Aborts when the connection closed before the answer went out (a held pull then leaves its table at once). */
function clientGone(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone.signal;
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
    throw new Refusal('BAD_JSON');
  }
}

/** Seconds a client is told to wait before it retries a write the relay's disk refused. */
export const DISK_RETRY_AFTER_SECONDS = 30;

/**
 * Refusals that heal by themselves, and the retry-after they carry: a busy store (its transaction
 * queue full, or closing for shutdown) soon; a disk that refused a write later (README "What a
 * client can get back"). Always retryable: items of a push commit one by one, so some may have been
 * accepted before the disk refused; their retry is a `duplicate` with the first seq.
 */
const RETRY_AFTER_SECONDS: Partial<Record<RefusalCode, number>> = {
  STORE_BUSY: 1,
  STORE_FULL: DISK_RETRY_AFTER_SECONDS,
  STORE_IO: DISK_RETRY_AFTER_SECONDS,
  STORE_SYNC_FAILED: DISK_RETRY_AFTER_SECONDS,
};

/** A full disk is 507 and heals once space is freed; an I/O error or a failed sync is 503 (a failed sync heals only with a restart). */
const DISK_REFUSALS: Record<StoreDiskFault, 'STORE_FULL' | 'STORE_IO' | 'STORE_SYNC_FAILED'> = {
  full: 'STORE_FULL',
  io: 'STORE_IO',
  sync: 'STORE_SYNC_FAILED',
};

/** Answers `refusal` with its catalogue status, its code in the refusal header, and its body. */
function sendRefusal(reply: FastifyReply, refusal: Refusal): FastifyReply {
  const retryAfter = RETRY_AFTER_SECONDS[refusal.code];
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  return reply.code(REFUSALS[refusal.code].status).header(REFUSAL_HEADER, refusal.code).send(refusal.body());
}

/** The refusals written to a raw socket: the HTTP layer's own, before any request is parsed. */
type SocketRefusal = 'HEADERS_TOO_LARGE' | 'BODY_TOO_LARGE' | 'REQUEST_TIMEOUT' | 'MALFORMED_HTTP' | 'METHOD_NOT_ALLOWED';

/** Node's HTTP-layer error codes that have a more fitting refusal than MALFORMED_HTTP. */
const CLIENT_ERROR_ANSWERS = new Map<string | undefined, SocketRefusal>([
  ['HPE_HEADER_OVERFLOW', 'HEADERS_TOO_LARGE'],
  ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 'BODY_TOO_LARGE'],
  ['ERR_HTTP_REQUEST_TIMEOUT', 'REQUEST_TIMEOUT'],
]);

/** Writes a JSON refusal straight to a socket that no Fastify reply owns, and closes it. */
/** A coded refusal written straight to a socket that no Fastify reply owns, which is then closed. */
function refuseOnSocket(socket: Duplex, code: SocketRefusal): void {
  endWithJson(socket, REFUSALS[code].status, new Refusal(code).body(), { [REFUSAL_HEADER]: code });
}

/** Answers HTTP-layer refusals (malformed request line or headers, timeouts) as JSON too (protocol.md §7.18). */
function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  refuseOnSocket(socket, CLIENT_ERROR_ANSWERS.get(error.code) ?? 'MALFORMED_HTTP');
}

/** The operator's view (metrics, logs, health: observability.ts), kept out of the routes. */
export interface HttpObserver {
  /** adds its hooks and routes to the app */
  install(app: FastifyInstance): void;
  /** a relay route answered 200 (enrolments, rotations; push outcomes come from the core) */
  answered(route: string): void;
}

/** The schema compilers of an app whose routes have no schema: one asked for is a programming error. */
function noSchemaCompiler(): never {
  throw new Error("the relay's routes take no JSON schema");
}

/**
 * The relay's app on a port bound before the store opened (bound-port.ts): requests reach it once
 * the caller has awaited `app.ready()` and opened the port; `app.close()` closes the port too.
 */
export function buildRelayHttp(core: RelayCore, config: RelayConfig, port: BoundPort, observer?: HttpObserver): FastifyInstance {
  // the workers of a relay group share one log: each one's request ids carry its worker id
  const reqIdPrefix = cluster.isWorker ? `w${cluster.worker?.id ?? 0}-req-` : 'req-';
  let requests = 0;
  const genReqId = (): string => {
    requests = (requests + 1) % Number.MAX_SAFE_INTEGER;
    return `${reqIdPrefix}${requests.toString(36)}`;
  };
  const app = Fastify({
    logger: false,
    bodyLimit: config.max_body_bytes,
    clientErrorHandler,
    return503OnClosing: true,
    serverFactory: (handler) => port.adopt(handler),
    genReqId,
    // a URL the router cannot decode (bad percent-encoding) is refused like any malformed request
    frameworkErrors: (_error, _request, reply) => {
      sendRefusal(reply, new Refusal('MALFORMED_REQUEST'));
    },
    // no route has a JSON schema (bodies are checked by our own code): without these, Fastify loads
    // ajv and fast-json-stringify's compilers into every serving process all the same
    schemaController: { compilersFactory: { buildValidator: noSchemaCompiler, buildSerializer: noSchemaCompiler } },
  });
  // Fastify closes only servers it listened on itself; this hook runs after its preClose hooks
  // (closing connections as their answers go out), then waits for every connection to end.
  app.addHook('onClose', async () => {
    await port.close();
  });
  // HTTP/1.1 requires Host (RFC 9112 §3.2); the refusal is JSON like every other answer (protocol.md §7.18).
  app.addHook('onRequest', async (request, reply) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) return sendRefusal(reply, new Refusal('MISSING_HOST_HEADER'));
    return undefined;
  });
  // A connection whose request was in flight when closing began would otherwise stay open (keep-alive)
  // until its idle timeout and hold the shutdown for over a minute: answer it, then close it.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    // held pulls are answered now (a fresh read each), not at the end of their wait
    core.context.heldPulls.close();
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  // Without a listener Node drops a CONNECT without a word; the relay is no proxy and says so.
  app.server.on('connect', (_request, socket: Duplex) => refuseOnSocket(socket, 'METHOD_NOT_ALLOWED'));
  const enrolmentRate = new RateWindow(config.enrol_per_minute, MAX_RATE_ADDRESSES);

  // Bodies arrive as raw bytes whatever their content type: the hop signs them byte for byte.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.setErrorHandler((error: Error & { code?: string; statusCode?: number }, _request, reply) => {
    if (error instanceof Refusal) return sendRefusal(reply, error);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendRefusal(reply, new Refusal('BODY_TOO_LARGE'));
    if (error instanceof StoreDiskError) return sendRefusal(reply, new Refusal(DISK_REFUSALS[error.fault]));
    if (error instanceof StoreOverloadedError || error instanceof StoreClosedError || error instanceof StoreLockLostError)
      return sendRefusal(reply, new Refusal('STORE_BUSY'));
    // Fastify's own 4xx (a bad URL, a bad content-length): the routes take no params and any content type, so always a 400
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) return sendRefusal(reply, new Refusal('MALFORMED_REQUEST'));
    app.log.error(error);
    return sendRefusal(reply, new Refusal('INTERNAL'));
  });
  // Any method a route does not take lands here (also TRACE, PROPFIND…): a known path answers 405.
  app.setNotFoundHandler((request, reply) => {
    const methods = known.get((request.raw.url ?? '').split('?', 1)[0] ?? '');
    if (methods === undefined) return sendRefusal(reply, new Refusal('NOT_FOUND'));
    return sendRefusal(reply.header('allow', [...methods].join(', ')), new Refusal('METHOD_NOT_ALLOWED'));
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
          return sendRefusal(reply, new Refusal('RATE'));
        }
        const raw = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '';
        const path = request.raw.url ?? request.url;
        const hop = hopHeaders(request);
        const query = parseQuery(path);
        let caller =
          spec.hop === 'none' || !carriesHop(hop)
            ? null
            : await core.caller(hop, { method: spec.method, path, rawBody: raw }, spec.lookupPriority?.(query) ?? 'ordinary');
        if (caller !== null) {
          // a hosted relay also wants the caller's access token (docs/hosted-relay.md "Sessions")
          const refusal = await core.sessionRefusal(caller, header(request, 'authorization'));
          if (refusal !== null && spec.hop === 'required') return sendRefusal(reply, refusal);
          if (refusal !== null) caller = null;
        }
        if (spec.hop === 'required' && caller === null) return sendRefusal(reply, badHop());
        const answer = await spec.handler({ request, reply, body: parseBody(raw), query, caller });
        observer?.answered(spec.url);
        if (answer instanceof EncodedJson) return reply.code(200).type('application/json; charset=utf-8').send(answer.bytes);
        return reply.code(200).send(answer);
      },
    });
  }
  return app;
}
