// Structured JSON request logs (pino): request id, method, route, status, latency and the
// fingerprint of the host key the request carried. Never a key, token, signature, header dump or body.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { isPublicKey } from '../../protocol/keys.ts';

/** Standard output gets request lines in blocks of at least this many bytes (one write per line costs a busy relay dearly)… */
export const LOG_BLOCK_BYTES = 8 * 1024;
/** …and at least this often, so that a quiet relay's lines still show at once. */
export const LOG_FLUSH_MS = 250;
/** Lines waiting for a slow standard output beyond this many bytes are dropped, never held in memory. */
export const LOG_BUFFER_MAX_BYTES = 8 * 1024 * 1024;

/** JSON lines on `destination` (default: standard output, written asynchronously in blocks; flush before exit). */
export function createRelayLogger(destination?: DestinationStream): Logger {
  if (destination !== undefined) return pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, destination);
  const stdout = pino.destination({ fd: 1, sync: false, minLength: LOG_BLOCK_BYTES, maxLength: LOG_BUFFER_MAX_BYTES });
  setInterval(() => { stdout.flush(); }, LOG_FLUSH_MS).unref();
  return pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, stdout);
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
