// A thin client of the relay's HTTP API (protocol.md §2–§3): signs every call with the relay hop
// and returns status, JSON and the refusal code header as they came; the readers of
// src/protocol/relay-api/ turn an answer into a typed value or a refusal code. It holds no state.
import { fetchFailureText } from '../../common/fetch-failure.ts';
import { readCappedText } from '../../common/read-capped.ts';
import { canonicalJson } from '../../protocol/canonical.ts';
import type { SigningKey } from '../../protocol/keys.ts';
import { signRelayHop } from '../../protocol/relay-hop.ts';
import type { WireAnswer } from '../../protocol/relay-api/answer.ts';
import { readChallengeAnswer } from '../../protocol/relay-api/enrolment.ts';
import { REFUSAL_HEADER } from '../../protocol/relay-api/refusals.ts';

/** Longest answer body this client reads (a pull page is capped at 8 MiB of wire, base64 adds a third). */
export const RELAY_ANSWER_MAX_BYTES = 16 * 1024 * 1024;

/** Socket errors of a kept-alive connection the other side had closed. */
const STALE_CONNECTION_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** The relay could not be reached or gave no answer in time (the message names the cause). */
export class RelayUnreachableError extends Error {}

export interface RelayAnswer<T = Record<string, unknown>> extends WireAnswer {
  status: number;
  body: T;
  /** the relay's Date header, for clock-skew diagnosis */
  date: string | null;
  /** the relay's Retry-After header (a refusal that heals: busy, or its disk full) */
  retryAfter: string | null;
}

export interface RelayApiOptions {
  baseUrl: string;
  hostName: string;
  key: SigningKey;
  nowMs?: () => number;
  /** abort a call after this long (ms) */
  timeoutMs?: number;
  /** a hosted relay's access token, sent as `authorization: Bearer` with every signed call (may throw) */
  bearer?: () => Promise<string>;
}

/** The enrol `proof` an authority needs, built for the challenge just received. */
export type ProofBuilder = (challenge: string) => Promise<unknown>;

export class RelayApi {
  readonly #options: RelayApiOptions;
  constructor(options: RelayApiOptions) {
    this.#options = options;
  }

  get publicKey(): string {
    return this.#options.key.publicKey;
  }

  /** A call with the relay hop (`signed`) or without; `body` is sent as the exact text given or as JSON. */
  /** `extraTimeoutMs` lengthens the call's timeout (a held pull); `stop` aborts it (the daemon stopping). */
  async call<T = Record<string, unknown>>(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    signed = true,
    extraTimeoutMs = 0,
    stop?: AbortSignal,
  ): Promise<RelayAnswer<T>> {
    const rawBody = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
    const headers: Record<string, string> = rawBody === '' ? {} : { 'content-type': 'application/json' };
    // the token first: getting it may run the token command, and the hop's time should be fresh
    if (signed && this.#options.bearer !== undefined) headers['authorization'] = `Bearer ${await this.#options.bearer()}`;
    const now = (this.#options.nowMs ?? Date.now)();
    if (signed) Object.assign(headers, signRelayHop({ method, path, rawBody }, this.#options.hostName, this.#options.key, now));
    const send = (): Promise<Response> =>
      fetch(new URL(path, this.#options.baseUrl), {
        method,
        headers,
        ...(rawBody === '' ? {} : { body: rawBody }),
        signal:
          stop === undefined
            ? AbortSignal.timeout((this.#options.timeoutMs ?? 30_000) + extraTimeoutMs)
            : AbortSignal.any([AbortSignal.timeout((this.#options.timeoutMs ?? 30_000) + extraTimeoutMs), stop]),
      });
    let response: Response;
    try {
      try {
        response = await send();
      } catch (err) {
        // A pooled connection the relay closed (a restart) fails before the request is read: send it
        // once more on a fresh one. Every relay call is safe to repeat (pushes dedup, acks are monotonic).
        if (!STALE_CONNECTION_CODES.has((err as { cause?: { code?: string } }).cause?.code ?? '')) throw err;
        response = await send();
      }
    } catch (err) {
      throw new RelayUnreachableError(`cannot reach ${this.#options.baseUrl}: ${fetchFailureText(err)}`);
    }
    const text = await readCappedText(response, RELAY_ANSWER_MAX_BYTES);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { error: 'relay answered with non-JSON' };
    }
    const header = (name: string): string | null => response.headers.get(name);
    return { status: response.status, body: parsed as T, refusalCode: header(REFUSAL_HEADER), date: header('date'), retryAfter: header('retry-after') };
  }

  info() {
    return this.call('GET', '/v2/relay/info');
  }

  /** challenge + enrol with the host key (and an authority's `proof`, built for the challenge, when the relay needs one) */
  async enrol(ownerFp = '', buildProof?: ProofBuilder): Promise<RelayAnswer> {
    const { hostName: host, key } = this.#options;
    const challenged = await this.call('POST', '/v1/relay/challenge', { host, pubkey: key.publicKey }, false);
    const reply = readChallengeAnswer(challenged);
    if (!reply.ok) return challenged;
    const { challenge } = reply.value;
    const sig = key.sign(canonicalJson({ v: 1, challenge, host, pubkey: key.publicKey, owner_fp: ownerFp }));
    const proof = buildProof === undefined ? undefined : await buildProof(challenge);
    return this.call('POST', '/v1/relay/enrol', { host, pubkey: key.publicKey, owner_fp: ownerFp, sig, ...(proof === undefined ? {} : { proof }) }, false);
  }

  push(items: unknown[]) {
    return this.call('POST', '/v2/relay/items', { items });
  }

  /** With `waitS`, a relay that advertises max_wait_s holds the pull that long when nothing waits (the call's timeout grows by it). */
  pull(after: number, limit?: number, epoch?: string, waitS?: number, stop?: AbortSignal) {
    const query = new URLSearchParams({ after: String(after) });
    if (limit !== undefined) query.set('limit', String(limit));
    if (epoch !== undefined) query.set('epoch', epoch);
    if (waitS !== undefined && waitS > 0) query.set('wait', String(waitS));
    return this.call('GET', `/v2/relay/items?${query.toString()}`, undefined, true, (waitS ?? 0) * 1000, stop);
  }

  /** A v2 ack always names the epoch its seqs belong to (protocol.md §7.7). */
  ack(through: number, epoch: string) {
    return this.call('POST', '/v2/relay/ack', { through, epoch });
  }

  /** Publishes this host's signed v2 enc-key ad. */
  publishEncAd(ad: unknown, sig: string) {
    return this.call('POST', '/v2/relay/enc-key', { ad, sig });
  }

  /** Publishes this host's legacy v1 enc-key ad (for relays that predate signed v2 ads). */
  publishEncAdV1(encPub: string, sig: string) {
    return this.call('POST', '/v1/relay/enc-key', { enc_pub: encPub, sig });
  }

  /** A peer's enc-key ad, looked up by its host key. */
  encAd(hostPubkey: string) {
    return this.call('GET', `/v2/relay/enc-key?pubkey=${encodeURIComponent(hostPubkey)}`);
  }

  /** Publishes this host's signed sender allowlist. */
  publishSenders(list: unknown, sig: string) {
    return this.call('POST', '/v2/relay/senders', { list, sig });
  }

  /** Moves this host's enrolment and queue to its new key (the record proves itself: no hop). */
  rotate(rotation: unknown) {
    return this.call('POST', '/v2/relay/rotate', { rotation }, false);
  }
}
