// The LAN face of a host (protocol §5): thin over the node. Signed routes check the LAN hop of an
// approved peer; every answer is JSON; bodies are capped while they stream in.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { failPoint } from '../../../failpoint.ts';
import { canonicalJson } from '../../../protocol/canonical.ts';
import { lanHopTimeIsFresh, verifyLanHopSignature } from '../../../protocol/lan-hop.ts';
import { isPlainObject } from '../../../protocol/validate.ts';
import { ownDirectory } from '../../directory/directory.ts';
import type { HostNode } from '../../core/node.ts';
import { acceptBeacon, notePeerCall } from '../../presence/learn.ts';
import { acceptUnpair, encAdOf, pairAcceptJoin, pairHello, PairError, PairNonces } from '../../core/pairing.ts';
import { acceptReceipt } from '../../core/receipts.ts';
import { receive } from '../../core/receive.ts';
import { applyPeerRotation, refreshKeys } from '../../core/rotation.ts';
import type { PeerRow } from '../../store/peers-table.ts';
import { nameDiskError } from '../../store/disk-errors.ts';
import { HOST_FEATURES } from './features.ts';
import { HttpError, parseJsonObject, readBody, sendJson } from './http-util.ts';
import {
  LAN_MAX_BATCH,
  LAN_MAX_BODY_BYTES,
  LAN_MAX_ROTATIONS,
  LAN_SMALL_BODY_BYTES,
  OPEN_CALLS_PER_MINUTE,
  PAIR_NONCE_TTL_MS,
  PAIR_NONCES_MAX,
  PEER_CALLS_PER_MINUTE,
  RATE_TABLE_MAX,
  STATUS_CHALLENGE_MAX_CHARS,
} from './limits.ts';
import { RateWindow } from '../../../common/rate-window.ts';
import { endWithJson } from '../../../common/raw-http.ts';

export const LAN_VERSION = '0.6.0';

export interface LanServerOptions {
  /** called when a peer's verified call made some of its waiting rows due (wake the tick) */
  onPeerActive?: () => void;
  /** called with a call's failure the disk caused, named (the daemon logs it once per fault, not per call) */
  onDiskFault?: (named: string) => void;
  /** the daemon's log, for events a peer caused (an unpair) */
  log?: (line: string) => void;
}

interface Ctx {
  node: HostNode;
  req: IncomingMessage;
  url: URL;
  peer: PeerRow | null;
}

interface Route {
  method: 'GET' | 'POST';
  hop: boolean;
  maxBody: number;
  /** the answer's status when it is not 200 */
  status?: number;
  handle(ctx: Ctx, body: Record<string, unknown> | null): unknown;
}

function listField(body: Record<string, unknown> | null, field: string, max: number): unknown[] {
  const list = body?.[field];
  if (!Array.isArray(list)) throw new HttpError(400, `body needs a "${field}" array`);
  if (list.length > max) throw new HttpError(400, `at most ${max} ${field} per call`);
  return list;
}

/** The id an envelope answer carries, read from a record that may be malformed (its result then says why). */
function envelopeIdOf(x: unknown): string | null {
  return isPlainObject(x) && typeof x.id === 'string' ? x.id : null;
}

export function createLanServer(node: HostNode, options: LanServerOptions = {}): Server {
  const peerRate = new RateWindow(PEER_CALLS_PER_MINUTE, RATE_TABLE_MAX);
  const addressRate = new RateWindow(OPEN_CALLS_PER_MINUTE, RATE_TABLE_MAX);
  const nonces = new PairNonces(PAIR_NONCES_MAX, PAIR_NONCE_TTL_MS);
  const addressLimited = (ctx: Ctx): void => {
    if (!addressRate.take(ctx.req.socket.remoteAddress ?? 'unknown', node.nowMs())) throw new HttpError(429, 'too many calls from this address: wait a minute');
  };
  const via = (ctx: Ctx) => ({ transport: 'lan', peerPubkey: (ctx.peer as PeerRow).host_pubkey });
  const startedAt = new Date(node.nowMs()).toISOString();

  const envelopesRoute: Route = {
    method: 'POST',
    hop: true,
    maxBody: LAN_MAX_BODY_BYTES,
    handle: (ctx, body) => ({
      results: listField(body, 'envelopes', LAN_MAX_BATCH).map((env) => {
        const result = receive(node, env, via(ctx));
        return { id: envelopeIdOf(env), result, status: result };
      }),
    }),
  };

  const routes: Record<string, Route> = {
    // §5 answer shapes: results[i] answers the i-th element; envelopes `{id, result}` (plus `status`,
    // the same string, which older builds of ours read), receipts and rotations bare strings.
    '/v2/envelopes': envelopesRoute,
    '/v1/envelopes': envelopesRoute,
    '/v1/receipts': {
      method: 'POST',
      hop: true,
      maxBody: LAN_MAX_BODY_BYTES,
      handle: (ctx, body) => ({ results: listField(body, 'receipts', LAN_MAX_BATCH).map((signed) => acceptReceipt(node, signed, via(ctx))) }),
    },
    '/v1/enc-key': { method: 'GET', hop: true, maxBody: 0, handle: () => encAdOf(node) },
    '/v1/agents': {
      method: 'GET',
      hop: true,
      maxBody: 0,
      handle: (ctx) => {
        // Noted so that directory mail skips a peer that reads our directory over the LAN; a store that
        // refuses the note does not refuse the answer.
        try {
          node.store.peerLinks.noteServed((ctx.peer as PeerRow).host, node.nowMs());
        } catch {
          /* the next call notes it */
        }
        return ownDirectory(node);
      },
    },
    '/v1/unpair': {
      method: 'POST',
      hop: true,
      maxBody: LAN_SMALL_BODY_BYTES,
      handle: (ctx) => {
        options.log?.(acceptUnpair(node, ctx.peer as PeerRow));
        return { ok: true };
      },
    },
    '/v1/rotate': {
      method: 'POST',
      hop: false,
      maxBody: LAN_SMALL_BODY_BYTES,
      handle: (ctx, body) => {
        addressLimited(ctx);
        return { results: listField(body, 'records', LAN_MAX_ROTATIONS).map((record) => applyPeerRotation(node, record)) };
      },
    },
    '/v1/presence': {
      method: 'POST',
      hop: true,
      maxBody: LAN_SMALL_BODY_BYTES,
      status: 202,
      handle: (ctx, body) => {
        if (!acceptBeacon(node, ctx.peer as PeerRow, body, ctx.req.socket.remoteAddress))
          throw new HttpError(400, 'not a presence beacon: {v:1, seq, port, addrs, version}');
        return { ok: true };
      },
    },
    '/v1/status': {
      method: 'GET',
      hop: false,
      maxBody: 0,
      handle: (ctx) => {
        const status = {
          service: 'agentmbx',
          v: 1,
          host: node.config.host,
          host_pubkey: node.keys.hostKey.publicKey,
          version: LAN_VERSION,
          started_at: startedAt,
          features: HOST_FEATURES,
        };
        const challenge = ctx.url.searchParams.get('challenge');
        if (challenge === null) return status;
        if (challenge.length === 0 || challenge.length > STATUS_CHALLENGE_MAX_CHARS) throw new HttpError(400, 'bad challenge');
        addressLimited(ctx);
        const signed = { ...status, type: 'status', challenge };
        return { ...signed, sig: node.keys.hostKey.sign(canonicalJson(signed)) };
      },
    },
    '/v1/pair/hello': {
      method: 'GET',
      hop: false,
      maxBody: 0,
      handle: (ctx) => {
        addressLimited(ctx);
        return pairHello(node, nonces);
      },
    },
    '/v1/pair/join': {
      method: 'POST',
      hop: false,
      maxBody: LAN_SMALL_BODY_BYTES,
      handle: (ctx, body) => {
        addressLimited(ctx);
        return pairAcceptJoin(node, nonces, body ?? {});
      },
    },
  };

  function verifyHop(req: IncomingMessage, path: string, rawBody: string): PeerRow {
    const host = req.headers['x-mbx-host'];
    const ts = req.headers['x-mbx-ts'];
    const sig = req.headers['x-mbx-sig'];
    const peer = typeof host === 'string' ? node.store.peers.get(host) : undefined;
    if (
      peer === undefined ||
      typeof ts !== 'string' ||
      !lanHopTimeIsFresh(ts, node.nowMs()) ||
      !verifyLanHopSignature(peer.host_pubkey, req.method ?? '', path, ts, rawBody, sig)
    ) {
      throw new HttpError(401, 'bad hop: not a paired host, a stale time or a bad signature');
    }
    if (!peerRate.take(peer.host, node.nowMs())) throw new HttpError(429, 'too many calls from this host: slow down');
    // Where the peer listens now (its address may have changed): noted for the daemon to prove; a
    // store that refuses the note does not refuse the call.
    try {
      notePeerCall(node, peer, req.socket.remoteAddress, req.headers['x-mbx-port']);
    } catch {
      /* the next call notes it */
    }
    if (node.store.outbox.makeDueNow(peer.host, node.nowMs()) > 0) options.onPeerActive?.();
    return peer;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://lan');
    const route = routes[url.pathname];
    if (route === undefined) throw new HttpError(404, 'no such endpoint');
    if (req.method !== route.method) throw new HttpError(405, `use ${route.method} on ${url.pathname}`);
    const rawBody = route.method === 'POST' ? await readBody(req, route.maxBody) : await readBody(req, 0);
    refreshKeys(node);
    const peer = route.hop ? verifyHop(req, url.pathname, rawBody) : null;
    // an empty POST body reads as {} (a peer's /v1/unpair may carry none)
    const body = route.method === 'POST' ? (rawBody === '' ? {} : parseJsonObject(rawBody)) : null;
    const answer = route.handle({ node, req, url, peer }, body);
    failPoint(`lan-after-handle:${url.pathname}`);
    sendJson(res, route.status ?? 200, answer);
  }

  /** whether the disk caused `err`; nothing was stored, so the caller retries later */
  const diskFault = (err: unknown): boolean => {
    const named = nameDiskError(err, node.home);
    if (named !== null) options.onDiskFault?.(named);
    return named !== null;
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) sendJson(res, err.status, err.code === undefined ? { error: err.message } : { error: err.message, code: err.code });
      else if (err instanceof PairError) sendJson(res, err.status, { error: err.message });
      else if (diskFault(err))
        sendJson(res, 503, { error: 'this host cannot store anything now (its disk refuses writes): try again later', code: 'STORE_DISK' });
      else {
        process.stderr.write(`lan: internal error: ${err instanceof Error ? err.message : String(err)}\n`);
        sendJson(res, 500, { error: 'internal error' });
      }
    });
  });
  server.on('clientError', (_err, socket) => {
    endWithJson(socket, 400, { error: 'malformed request' });
  });
  return server;
}
