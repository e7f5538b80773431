// The issuer's signing keys, cached by kid under the rules of design §8 (docs/hosted-relay.md):
// refreshed every 10 minutes and on an unknown kid, but never fetched more than once a minute,
// whatever the traffic; a fetched set replaces the old one whole, so a key that left the JWKS stops
// verifying at once; when fetches fail, the last good set stays usable for an hour after the last
// successful fetch, and after that lookups answer "unavailable" (the caller fails closed).
// jose's remote set drops its keys on a failed fetch, hence this wrapper around a local set.
import { AnswerTooLargeError, readCappedText } from '../../common/read-capped.ts';
import { createLocalJWKSet, type JSONWebKeySet, type JWK, type JWTVerifyGetKey } from 'jose';

/** A successful fetch is refreshed after this long (checked when a key is looked up). */
export const JWKS_REFRESH_MS = 10 * 60_000;
/** At most one fetch per this interval, whether for a refresh or an unknown kid. */
export const JWKS_MIN_FETCH_INTERVAL_MS = 60_000;
/** Cached keys stay usable this long after the last successful fetch; then lookups fail closed. */
export const JWKS_STALE_LIMIT_MS = 60 * 60_000;
/** Keys kept from one fetched set (an in-memory table); keys beyond it are ignored. */
export const JWKS_MAX_KEYS = 64;
/** Largest JWKS document read over HTTP. */
export const JWKS_MAX_BYTES = 64 * 1024;
/** A JWKS fetch is abandoned after this long. */
export const JWKS_FETCH_TIMEOUT_MS = 10_000;

/** Fetches the issuer's JWKS document (parsed JSON); throws with a short reason when it cannot. */
export type JwksFetch = () => Promise<unknown>;

export type KeyLookup =
  | { ok: true; getKey: JWTVerifyGetKey }
  | { ok: false; reason: string; /** true: the set cannot be trusted right now (503), not a verdict on the token */ unavailable: boolean };

export interface JwksCacheOptions {
  fetchJwks: JwksFetch;
  nowMs: () => number;
}

export class JwksCache {
  readonly #fetchJwks: JwksFetch;
  readonly #nowMs: () => number;
  #set: JWTVerifyGetKey | null = null;
  #kids = new Set<string>();
  #lastSuccessMs: number | null = null;
  #lastAttemptMs: number | null = null;
  #lastError: string | null = null;
  #inFlight: Promise<void> | null = null;

  constructor(options: JwksCacheOptions) {
    this.#fetchJwks = options.fetchJwks;
    this.#nowMs = options.nowMs;
  }

  /** The verification key resolver for a token signed under `kid`, or why there is none. */
  async lookup(kid: string): Promise<KeyLookup> {
    const now = this.#nowMs();
    const due = this.#lastSuccessMs === null || now - this.#lastSuccessMs >= JWKS_REFRESH_MS;
    if (due || !this.#kids.has(kid)) await this.#fetchIfAllowed(now);
    const lastSuccess = this.#lastSuccessMs;
    if (this.#set === null || lastSuccess === null) {
      return { ok: false, reason: `the token issuer's key set could not be fetched (${this.#lastError ?? 'not yet fetched'})`, unavailable: true };
    }
    if (now - lastSuccess > JWKS_STALE_LIMIT_MS) {
      return { ok: false, reason: `the token issuer's key set could not be fetched for over an hour (${this.#lastError ?? 'no answer'})`, unavailable: true };
    }
    if (!this.#kids.has(kid)) {
      // an unknown kid is a verdict only when the newest fetch succeeded; otherwise we cannot tell
      if (this.#lastError !== null) return { ok: false, reason: `the token's signing key is unknown and the issuer's key set cannot be fetched now (${this.#lastError})`, unavailable: true };
      return { ok: false, reason: "the token's signing key (kid) is not in the issuer's key set", unavailable: false };
    }
    return { ok: true, getKey: this.#set };
  }

  /**
   * The background refresh of a running relay (every minute): fetches when the set is 10 minutes old,
   * so a quiet relay's keys stay fresh and an outage is retried once a minute. Returns the failure, if any.
   */
  async refreshIfDue(): Promise<string | null> {
    const now = this.#nowMs();
    if (this.#lastSuccessMs !== null && now - this.#lastSuccessMs < JWKS_REFRESH_MS) return null;
    await this.#fetchIfAllowed(now);
    return this.#lastError;
  }

  async #fetchIfAllowed(now: number): Promise<void> {
    if (this.#inFlight !== null) return this.#inFlight;
    if (this.#lastAttemptMs !== null && now - this.#lastAttemptMs < JWKS_MIN_FETCH_INTERVAL_MS) return;
    this.#lastAttemptMs = now;
    this.#inFlight = this.#fetch(now).finally(() => { this.#inFlight = null; });
    return this.#inFlight;
  }

  async #fetch(now: number): Promise<void> {
    try {
      const keys = usableKeys(await this.#fetchJwks());
      this.#set = createLocalJWKSet({ keys });
      this.#kids = new Set(keys.map((k) => k.kid as string));
      this.#lastSuccessMs = now;
      this.#lastError = null;
    } catch (err) {
      this.#lastError = err instanceof JwksFetchError ? err.message : 'fetch failed';
    }
  }
}

/** A failure whose message is safe to show an operator (never the document's text). */
export class JwksFetchError extends Error {}

/** The Ed25519 signing keys of a JWKS document that carry a kid, first of each kid, at most JWKS_MAX_KEYS. */
function usableKeys(document: unknown): JWK[] {
  const keys = typeof document === 'object' && document !== null ? (document as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys)) throw new JwksFetchError('the answer is not a JWKS document');
  const out: JWK[] = [];
  const seen = new Set<string>();
  for (const key of keys as unknown[]) {
    if (out.length >= JWKS_MAX_KEYS) break;
    if (typeof key !== 'object' || key === null) continue;
    const jwk = key as JWK;
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string' || typeof jwk.kid !== 'string' || jwk.d !== undefined) continue;
    if (jwk.use !== undefined && jwk.use !== 'sig') continue;
    if (seen.has(jwk.kid)) continue;
    seen.add(jwk.kid);
    out.push({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, kid: jwk.kid, ...(jwk.alg === undefined ? {} : { alg: jwk.alg }) });
  }
  return out;
}

/** The JWKS fetch of a running relay: GET `url`, JSON, at most JWKS_MAX_BYTES, within JWKS_FETCH_TIMEOUT_MS. */
export function httpJwksFetch(url: string): JwksFetch {
  return async () => {
    let response: Response;
    try {
      response = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS) });
    } catch (err) {
      throw new JwksFetchError(err instanceof Error && err.name === 'TimeoutError' ? 'timed out' : 'cannot connect');
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new JwksFetchError(`HTTP ${response.status}`);
    }
    let text: string;
    try {
      text = await readCappedText(response, JWKS_MAX_BYTES);
    } catch (err) {
      throw new JwksFetchError(err instanceof AnswerTooLargeError ? 'the key set is too large' : 'the answer broke off');
    }
    try {
      return JSON.parse(text) as JSONWebKeySet;
    } catch {
      throw new JwksFetchError('the answer is not JSON');
    }
  };
}
