// The LAN client: signed calls to a peer's daemon, and the LAN transport over them.
import { connect } from 'node:net';
import { errorText } from '../../../common/answer-error.ts';
import { fetchFailureText } from '../../../common/fetch-failure.ts';
import { AnswerTooLargeError, readCappedText } from '../../../common/read-capped.ts';
import { signLanHop } from '../../../protocol/lan-hop.ts';
import { verifyEncAdV1 } from '../../../protocol/records/enc-ad.ts';
import { isPlainObject } from '../../../protocol/validate.ts';
import { HostError } from '../../core/host-error.ts';
import type { HostNode } from '../../core/node.ts';
import { SENDING_ORDER } from '../../store/outbox-kinds.ts';
import { listeningOf } from '../../presence/listening.ts';
import type { OutboxRow } from '../../store/outbox-table.ts';
import type { PeerRow } from '../../store/peers-table.ts';
import type { RowResult, Transport } from '../transport.ts';
import { readBatchAnswer, SETTLING } from './answers.ts';
import { LAN_CONNECT_TIMEOUT_MS, LAN_MAX_BATCH, LAN_MAX_BODY_BYTES, LAN_MAX_RESPONSE_BYTES, LAN_MAX_ROTATIONS } from './limits.ts';

/** How long one LAN call may take before it counts as failed. */
export const LAN_REQUEST_TIMEOUT_MS = 15_000;

export class LanError extends HostError {}

export interface LanAnswer {
  status: number;
  body: unknown;
}

/**
 * Opens (and closes) a TCP connection to `addr` within `timeoutMs`, else throws LanError. fetch()
 * offers no connect timeout of its own (undici waits 10 s), so a LAN call checks the path first:
 * a peer that drops packets costs LAN_CONNECT_TIMEOUT_MS, not the whole request timeout.
 */
export function probeConnect(addr: string, timeoutMs: number): Promise<void> {
  let url: URL;
  try {
    url = new URL(addr);
  } catch {
    return Promise.reject(new LanError(`bad address "${addr}": use host:port or http://host:port`));
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new LanError(`cannot reach ${addr}: no TCP connect within ${timeoutMs} ms`, 'unreachable'));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new LanError(`cannot reach ${addr}: ${err.code ?? err.message}`, 'unreachable'));
    });
  });
}

/** One call to a peer; `signAs` adds the LAN hop. Network failures (no connect in time included) throw LanError. */
export async function lanCall(
  addr: string,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  signAs: HostNode | null,
  timeoutMs = LAN_REQUEST_TIMEOUT_MS,
): Promise<LanAnswer> {
  await probeConnect(addr, Math.min(timeoutMs, LAN_CONNECT_TIMEOUT_MS));
  const rawBody = body === undefined ? '' : JSON.stringify(body);
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (signAs !== null) {
    Object.assign(headers, signLanHop(method, path, rawBody, signAs.config.host, signAs.keys.hostKey, signAs.nowMs()));
    // where our daemon listens: the peer learns our address from it (protocol §5)
    const port = listeningOf(signAs)?.port;
    if (port !== undefined) headers['x-mbx-port'] = String(port);
  }
  let res: Response;
  try {
    res = await fetch(addr + path, { method, headers, ...(body === undefined ? {} : { body: rawBody }), signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new LanError(`cannot reach ${addr}: ${fetchFailureText(err)}`, 'unreachable');
  }
  let text: string;
  try {
    text = await readCappedText(res, LAN_MAX_RESPONSE_BYTES);
  } catch (err) {
    if (err instanceof AnswerTooLargeError) throw new LanError(`answer from ${res.url} is larger than ${LAN_MAX_RESPONSE_BYTES} bytes`);
    throw new LanError(`answer from ${res.url} broke off: ${err instanceof Error ? err.message : String(err)}`);
  }
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // a non-JSON answer is not from an agentmbx host
  }
  return { status: res.status, body: parsed };
}

/** Fetches and checks a peer's enc key (signed by its pinned host key), and stores it. */
export async function fetchPeerEncKey(node: HostNode, peer: PeerRow): Promise<string> {
  const answer = await lanCall(peer.addr, 'GET', '/v1/enc-key', undefined, node);
  if (answer.status !== 200 || !isPlainObject(answer.body)) throw new LanError(errorText(answer));
  const { host, enc_pub: encPub, sig } = answer.body;
  if (host !== peer.host || typeof encPub !== 'string' || typeof sig !== 'string' || !verifyEncAdV1(host, encPub, sig, peer.host_pubkey)) {
    throw new LanError(`${peer.host} answered an enc key not signed by its pinned key`);
  }
  node.store.peers.setEncKey(peer.host, encPub, sig);
  return encPub;
}

/** Splits items into batches of at most `maxItems` and about `maxBytes` of JSON. */
function batches<T>(items: readonly T[], size: (item: T) => number, maxItems: number, maxBytes: number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const n = size(item) + 1;
    if (current.length > 0 && (current.length >= maxItems || bytes + n > maxBytes)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += n;
  }
  if (current.length > 0) out.push(current);
  return out;
}

const ROUTES = {
  envelope: { path: '/v2/envelopes', field: 'envelopes', hop: true, maxItems: LAN_MAX_BATCH, settling: SETTLING.envelopes },
  receipt: { path: '/v1/receipts', field: 'receipts', hop: true, maxItems: LAN_MAX_BATCH, settling: SETTLING.receipts },
  rotation: { path: '/v1/rotate', field: 'records', hop: false, maxItems: LAN_MAX_ROTATIONS, settling: SETTLING.rotations },
} as const;

/** Moves outbox rows to a peer's daemon over HTTP on the LAN. */
export class LanTransport implements Transport {
  readonly name = 'lan';
  readonly #node: HostNode;

  constructor(node: HostNode) {
    this.#node = node;
  }

  /**
   * The attempt is written down before it starts (a daemon killed inside it counts it as failed on
   * restart). A call that gets no answer ends the attempt: the rest of the batches fail with it
   * instead of waiting out the same dead path one after another.
   */
  async deliver(peer: PeerRow, rows: readonly OutboxRow[]): Promise<RowResult[]> {
    const { store } = this.#node;
    try {
      store.peers.noteAttempt(peer.host, this.#node.nowMs());
    } catch {
      // The record only spares a restarted daemon a blind retry: a store that refuses the write (a
      // full disk) does not stop the delivery, whose own results then meet the refusal.
    }
    const results: RowResult[] = [];
    let unreachable: string | null = null;
    for (const kind of SENDING_ORDER) {
      const route = ROUTES[kind];
      const ofKind = rows.filter((r) => r.kind === kind);
      for (const batch of batches(ofKind, (r) => r.wire.length, route.maxItems, LAN_MAX_BODY_BYTES - 1024)) {
        if (unreachable === null) {
          const sent = await this.#post(peer, route, batch);
          if (typeof sent === 'string') unreachable = sent;
          else results.push(...sent);
        }
        if (unreachable !== null) results.push(...batch.map((r): RowResult => ({ rowId: r.id, outcome: 'failed', detail: unreachable as string })));
      }
    }
    if (unreachable !== null) store.peers.noteError(peer.host, unreachable, this.#node.nowMs());
    else store.peers.endAttempt(peer.host);
    return results;
  }

  /** One batch; the error text when the call got no answer (the peer is unreachable). */
  async #post(peer: PeerRow, route: (typeof ROUTES)[keyof typeof ROUTES], rows: OutboxRow[]): Promise<RowResult[] | string> {
    const failAll = (detail: string): RowResult[] => rows.map((r) => ({ rowId: r.id, outcome: 'failed', detail }));
    let answer: LanAnswer;
    try {
      const body = { [route.field]: rows.map((r) => JSON.parse(r.wire) as unknown) };
      answer = await lanCall(peer.addr, 'POST', route.path, body, route.hop ? this.#node : null);
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
    const list = isPlainObject(answer.body) && Array.isArray(answer.body.results) ? (answer.body.results as unknown[]) : null;
    if (answer.status !== 200 || list === null) {
      this.#node.store.peers.noteError(peer.host, errorText(answer));
      return failAll(errorText(answer));
    }
    this.#node.store.peers.noteReachable(peer.host, this.#node.nowMs());
    // the peer's LAN answers: its rows that backed off go now, not after their backoff
    this.#node.store.outbox.makeDueNow(peer.host, this.#node.nowMs());
    return readBatchAnswer(rows, list, route.settling);
  }
}
