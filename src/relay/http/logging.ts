// Structured JSON request logs (pino): request id, method, route, status, latency and the
// fingerprint of the host key the request carried. Never a key, token, signature, header dump or body.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { isPublicKey } from '../../protocol/keys.ts';
import { UNREF_TICKER, type Ticker } from '../../common/ticker.ts';
import type { RelayLogLevel } from './log-levels.ts';

export type { RelayLogLevel } from './log-levels.ts';

/** Standard output gets request lines in blocks of at least this many bytes (one write per line costs a busy relay dearly)… */
export const LOG_BLOCK_BYTES = 8 * 1024;
/** …and at least this often, so that a quiet relay's lines still show at once. */
export const LOG_FLUSH_MS = 250;
/** Lines waiting for a slow standard output beyond this many bytes are dropped, never held in memory. */
export const LOG_BUFFER_MAX_BYTES = 8 * 1024 * 1024;

/** JSON lines on `destination` (default: standard output, written asynchronously in blocks; flush before exit). */
export function createRelayLogger(destination?: DestinationStream, level: RelayLogLevel = 'info'): Logger {
  const options = { base: undefined, timestamp: pino.stdTimeFunctions.isoTime, level };
  if (destination !== undefined) return pino(options, destination);
  const stdout = pino.destination({ fd: 1, sync: false, minLength: LOG_BLOCK_BYTES, maxLength: LOG_BUFFER_MAX_BYTES });
  setInterval(() => {
    stdout.flush();
  }, LOG_FLUSH_MS).unref();
  return pino(options, stdout);
}

/** Successful polls are summarised at info, one line per window, instead of a line each. */
export const POLL_SUMMARY_WINDOW_MS = 60_000;
/** Distinct hosts one summary tells apart; polls of further hosts are still counted. */
export const POLL_SUMMARY_MAX_HOSTS = 10_000;

/**
 * Counts successful polls and logs `{"msg":"polls","polls":N,"hosts":H,"window_ms":W}` once a window,
 * on a timer (so that an idle relay still writes its last summary) and at close. A window without
 * polls logs nothing.
 */
export class PollSummary {
  readonly #logger: Logger;
  readonly #nowMs: () => number;
  readonly #stopTicker: () => void;
  #windowStart: number;
  #polls = 0;
  readonly #hosts = new Set<string>();

  constructor(logger: Logger, nowMs: () => number, ticker: Ticker = UNREF_TICKER) {
    this.#logger = logger;
    this.#nowMs = nowMs;
    this.#windowStart = nowMs();
    this.#stopTicker = ticker(() => this.flush(), POLL_SUMMARY_WINDOW_MS);
  }

  /** Counts one successful poll by the host with this fingerprint (null: none shown). */
  polled(hostFp: string | null): void {
    this.#polls += 1;
    if (hostFp !== null && this.#hosts.size < POLL_SUMMARY_MAX_HOSTS) this.#hosts.add(hostFp);
  }

  /** Logs the window's summary if it counted a poll, and starts the next window. */
  flush(): void {
    const now = this.#nowMs();
    if (this.#polls > 0) this.#logger.info({ polls: this.#polls, hosts: this.#hosts.size, window_ms: now - this.#windowStart }, 'polls');
    this.#windowStart = now;
    this.#polls = 0;
    this.#hosts.clear();
  }

  /** At shutdown: stops the timer and logs the last window. */
  close(): void {
    this.#stopTicker();
    this.flush();
  }
}

/** The fingerprint of the x-mbx-key a request carried (verified or not: a 401 shows who tried), or null. */
function hostFingerprint(request: FastifyRequest): string | null {
  const key = request.headers['x-mbx-key'];
  return typeof key === 'string' && isPublicKey(key) ? fingerprint(key) : null;
}

/** The fields logged for one answered request. */
export function requestLogFields(request: FastifyRequest, reply: FastifyReply, route: string): Record<string, unknown> {
  return {
    req_id: request.id,
    method: request.method,
    route,
    status: reply.statusCode,
    latency_ms: Math.round(reply.elapsedTime * 100) / 100,
    host_fp: hostFingerprint(request),
  };
}
