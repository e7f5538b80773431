// The operator's view on the relay's HTTP face: request metrics and logs on every answer,
// GET /healthz, and GET /metrics — on the relay's port, or on its own listener (--metrics-bind)
// so that it need not be public.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { BoundPort } from './bound-port.ts';
import type { Health } from './health.ts';
import { PollSummary, requestLogFields } from './logging.ts';
import type { Ticker } from '../../common/ticker.ts';
import { MetricsUnavailableError, type RelayMetrics } from './metrics.ts';
import type { HttpObserver } from './server.ts';

export interface ObservabilityOptions {
  metrics: RelayMetrics;
  health: () => Promise<Health>;
  /** request logs, or null for none */
  logger: Logger | null;
  /** serve /metrics on the relay's own port (false when a separate listener serves it) */
  metricsOnRelayPort: boolean;
  /** the relay's clock, for the poll summary's windows */
  nowMs: () => number;
  /** what ends the poll summary's windows (default: an unref'd timer) */
  pollSummaryTicker?: Ticker;
}

/** The relay's observer; close() (after the HTTP face closed) writes the last poll summary. */
export interface RelayObserver extends HttpObserver {
  close(): void;
}

/** The routes hosts poll: a successful answer is logged at debug and summarised at info. */
const POLL_ROUTES: ReadonlySet<string> = new Set(['GET /v2/relay/items', 'GET /v1/relay/messages']);

/** What /healthz answers: 200 {status:"ok"} or 503 {status:"unhealthy", reason}. */
async function healthAnswer(health: () => Promise<Health>): Promise<{ status: number; body: Record<string, string> }> {
  const result = await health();
  return result.ok ? { status: 200, body: { status: 'ok' } } : { status: 503, body: { status: 'unhealthy', reason: result.reason } };
}

/** What /metrics answers: 200 and the exposition, or 503 when a relay group's figures cannot be gathered now. */
async function metricsAnswer(metrics: RelayMetrics): Promise<{ status: number; contentType: string; body: string }> {
  try {
    return { status: 200, ...(await metrics.exposition()) };
  } catch (error) {
    if (!(error instanceof MetricsUnavailableError)) throw error;
    return { status: 503, contentType: 'application/json', body: JSON.stringify({ error: error.message }) };
  }
}

export function relayObserver(options: ObservabilityOptions): RelayObserver {
  const { metrics, logger } = options;
  const polls = logger === null ? null : new PollSummary(logger, options.nowMs, options.pollSummaryTicker);
  return {
    install(app: FastifyInstance): void {
      app.addHook('onResponse', async (request, reply) => {
        const route = request.routeOptions.url ?? 'unmatched';
        metrics.request(route, reply.statusCode);
        if (logger === null || polls === null) return;
        const fields = requestLogFields(request, reply, route);
        const polled = reply.statusCode === 200 && POLL_ROUTES.has(`${request.method} ${route}`);
        if (polled) {
          logger.debug(fields, 'request');
          polls.polled(fields.host_fp as string | null);
        } else {
          logger.info(fields, 'request');
        }
      });
      app.get('/healthz', async (_request, reply: FastifyReply) => {
        const { status, body } = await healthAnswer(options.health);
        return reply.code(status).send(body);
      });
      if (options.metricsOnRelayPort) {
        app.get('/metrics', async (_request, reply: FastifyReply) => {
          const { status, contentType, body } = await metricsAnswer(metrics);
          return reply.code(status).header('content-type', contentType).send(body);
        });
      }
    },
    answered: (route) => metrics.answered(route),
    close: () => polls?.close(),
  };
}

/** A separate listener for GET /metrics and GET /healthz only (`--metrics-bind HOST:PORT`), on a port bound at start. */
export function serveMetrics(options: ObservabilityOptions, port: BoundPort): void {
  port.adopt((request, response) => {
    const send = (status: number, contentType: string, body: string): void => {
      // once the relay stops, a kept-alive scraper's connection would otherwise hold the stop for its idle timeout
      const closing = port.closing ? { connection: 'close' } : {};
      response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...closing }).end(body);
    };
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || (path !== '/metrics' && path !== '/healthz')) {
      send(404, 'application/json', JSON.stringify({ error: 'not found' }));
      return;
    }
    const answer =
      path === '/metrics'
        ? metricsAnswer(options.metrics)
        : healthAnswer(options.health).then(({ status, body }) => ({ status, contentType: 'application/json', body: JSON.stringify(body) }));
    answer.then(
      ({ status, contentType, body }) => send(status, contentType, body),
      () => send(500, 'application/json', JSON.stringify({ error: 'internal error' })),
    );
  });
  port.open();
}
