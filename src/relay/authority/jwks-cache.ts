// The issuer's signing keys, cached by kid under the rules of design §8 (docs/hosted-relay.md):
// refreshed every 10 minutes and on an unknown kid, but never fetched more than once a minute,
// whatever the traffic; a fetched set replaces the old one whole, so a key that left the JWKS stops
// verifying at once; when fetches fail, the last good set stays usable for an hour after the last
// successful fetch, and after that lookups answer "unavailable" (the caller fails closed).
// jose's remote set drops its keys on a failed fetch, hence this cache of our own. Each key is
// imported for the one algorithm its JWK allows (kty/crv, and alg where RSA leaves a choice): the
// token header's `alg` is only checked against it, never used to pick how a key is read.
import { AnswerTooLargeError, readCappedText } from '../../common/read-capped.ts';
import { importJWK, type CryptoKey, type JSONWebKeySet, type JWK } from 'jose';

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
/** RSA keys with a shorter modulus are ignored. */
export const MIN_RSA_KEY_BITS = 2048;

/** An issuer's verification key and the token `alg` values it verifies (one algorithm; EdDSA has two spellings). */
export interface VerificationKey {
  key: CryptoKey;
  algorithms: readonly [string, ...string[]];
}

/** Fetches the issuer's JWKS document (parsed JSON); throws with a short reason when it cannot. */
export type JwksFetch = () => Promise<unknown>;

export type KeyLookup =
  | { ok: true; key: VerificationKey }
  | { ok: false; reason: string /** true: the set cannot be trusted right now (503), not a verdict on the token */; unavailable: boolean };

export interface JwksCacheOptions {
  fetchJwks: JwksFetch;
  nowMs: () => number;
}

export class JwksCache {
  readonly #fetchJwks: JwksFetch;
  readonly #nowMs: () => number;
  #keys: Map<string, VerificationKey> | null = null;
  #lastSuccessMs: number | null = null;
  #lastAttemptMs: number | null = null;
  #lastError: string | null = null;
  #inFlight: Promise<void> | null = null;

  constructor(options: JwksCacheOptions) {
    this.#fetchJwks = options.fetchJwks;
    this.#nowMs = options.nowMs;
  }

  /** The verification key of a token signed under `kid`, or why there is none. */
  async lookup(kid: string): Promise<KeyLookup> {
    const now = this.#nowMs();
    const due = this.#lastSuccessMs === null || now - this.#lastSuccessMs >= JWKS_REFRESH_MS;
    if (due || this.#keys?.has(kid) !== true) await this.#fetchIfAllowed(now);
    const lastSuccess = this.#lastSuccessMs;
    const keys = this.#keys;
    if (keys === null || lastSuccess === null) {
      return { ok: false, reason: `the token issuer's key set could not be fetched (${this.#lastError ?? 'not yet fetched'})`, unavailable: true };
    }
    if (now - lastSuccess > JWKS_STALE_LIMIT_MS) {
      return { ok: false, reason: `the token issuer's key set could not be fetched for over an hour (${this.#lastError ?? 'no answer'})`, unavailable: true };
    }
    const key = keys.get(kid);
    if (key === undefined) {
      // an unknown kid is a verdict only when the newest fetch succeeded; otherwise we cannot tell
      if (this.#lastError !== null)
        return {
          ok: false,
          reason: `the token's signing key is unknown and the issuer's key set cannot be fetched now (${this.#lastError})`,
          unavailable: true,
        };
      return { ok: false, reason: "the token's signing key (kid) is not in the issuer's key set", unavailable: false };
    }
    return { ok: true, key };
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
    this.#inFlight = this.#fetch(now).finally(() => {
      this.#inFlight = null;
    });
    return this.#inFlight;
  }

  async #fetch(now: number): Promise<void> {
    try {
      this.#keys = await usableKeys(await this.#fetchJwks());
      this.#lastSuccessMs = now;
      this.#lastError = null;
    } catch (err) {
      this.#lastError = err instanceof JwksFetchError ? err.message : 'fetch failed';
    }
  }
}

/** A failure whose message is safe to show an operator (never the document's text). */
export class JwksFetchError extends Error {}

/** A JWK's public members, and the one algorithm it verifies (first, then any other spelling); null for a key the relay ignores. */
function publicKeyOf(jwk: JWK): { jwk: JWK; algorithms: readonly [string, ...string[]] } | null {
  const text = (value: unknown): value is string => typeof value === 'string' && value !== '';
  const { kty, crv, alg } = jwk;
  // RS256 unless the JWK says PS256; an RSA key meant for any other algorithm is not ours to use
  if (kty === 'RSA' && text(jwk.n) && text(jwk.e) && (alg === undefined || alg === 'RS256' || alg === 'PS256')) {
    return { jwk: { kty, n: jwk.n, e: jwk.e }, algorithms: [alg ?? 'RS256'] };
  }
  if (kty === 'EC' && crv === 'P-256' && text(jwk.x) && text(jwk.y) && (alg === undefined || alg === 'ES256')) {
    return { jwk: { kty, crv, x: jwk.x, y: jwk.y }, algorithms: ['ES256'] };
  }
  // "Ed25519" is the fully-specified name of the same algorithm (RFC 9864)
  if (kty === 'OKP' && crv === 'Ed25519' && text(jwk.x) && (alg === undefined || alg === 'EdDSA' || alg === 'Ed25519')) {
    return { jwk: { kty, crv, x: jwk.x }, algorithms: ['EdDSA', 'Ed25519'] };
  }
  return null; // oct (HMAC) keys, other curves and key types
}

/**
 * The usable signing keys of a JWKS document by kid: RSA (at least MIN_RSA_KEY_BITS), EC P-256 and
 * Ed25519 public keys with a kid, first of each kid, at most JWKS_MAX_KEYS. Anything else is ignored.
 */
async function usableKeys(document: unknown): Promise<Map<string, VerificationKey>> {
  const keys = typeof document === 'object' && document !== null ? (document as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys)) throw new JwksFetchError('the answer is not a JWKS document');
  const out = new Map<string, VerificationKey>();
  const seen = new Set<string>();
  for (const key of keys as unknown[]) {
    if (out.size >= JWKS_MAX_KEYS) break;
    if (typeof key !== 'object' || key === null) continue;
    const jwk = key as JWK;
    if (typeof jwk.kid !== 'string' || jwk.d !== undefined || (jwk.use !== undefined && jwk.use !== 'sig')) continue;
    const usable = publicKeyOf(jwk);
    if (usable === null || seen.has(jwk.kid)) continue;
    seen.add(jwk.kid);
    const imported = await importPublicKey(usable.jwk, usable.algorithms[0]);
    if (imported === null) continue;
    const { modulusLength } = imported.algorithm as { modulusLength?: number };
    if (modulusLength !== undefined && modulusLength < MIN_RSA_KEY_BITS) continue;
    out.set(jwk.kid, { key: imported, algorithms: usable.algorithms });
  }
  return out;
}

/** The key imported for `alg`; null when its members do not make a key (the JWKS is the issuer's, but checked all the same). */
async function importPublicKey(jwk: JWK, alg: string): Promise<CryptoKey | null> {
  try {
    const key = await importJWK(jwk, alg, { extractable: false });
    return key instanceof Uint8Array ? null : key;
  } catch {
    return null;
  }
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
