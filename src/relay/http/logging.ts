// Structured JSON request logs (pino): request id, method, route, status, latency and the
// fingerprint of the host key the request carried. Never a key, token, signature, header dump or body.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { isPublicKey } from '../../protocol/keys.ts';

/** JSON lines on `destination` (default: standard output, written asynchronously). */
export function createRelayLogger(destination?: DestinationStream): Logger {
  return pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, destination ?? pino.destination({ fd: 1, sync: false }));
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
