// The hosted relay's EnrolmentAuthority (design §8, docs/hosted-relay.md): a host enrols with a
// short-lived access token of its account, verified offline against the issuer's JWKS, and bound
// to the host through the cloud key that the host key certified and proved it holds.
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { cloudKeyThumbprint, parseCloudKey, verifyCloudKeyCert, verifyCloudKeyPop } from '../../protocol/records/cloud-key.ts';
import type { EnrolmentAuthority, EnrolmentDecision, EnrolmentRequest } from './enrolment-authority.ts';
import type { JwksCache } from './jwks-cache.ts';
import { ACCOUNT_TOKEN_AUTHORITY, MAX_CLAIM_CHARS, MAX_TOKEN_CHARS, MAX_TOKEN_LIFETIME_S, TOKEN_CLOCK_TOLERANCE_S } from './token-limits.ts';

/** The claims of a verified access token that the relay uses. */
export interface AccessClaims {
  sub: string;
  account: string;
  org: string | null;
  client_id: string;
  jti: string;
  /** the bound cloud key's thumbprint (`cnf.jkt`) */
  jkt: string;
  /** seconds since the epoch */
  iat: number;
  exp: number;
}

export type Verified<T> = { ok: true; value: T } | { ok: false; reason: string; unavailable?: boolean };

export interface AccountTokenOptions {
  /** the accounts issuer (`iss`) */
  issuer: string;
  /** this relay's public URL (`aud`) */
  audience: string;
  keys: JwksCache;
  nowMs: () => number;
}

export class AccountTokenAuthority implements EnrolmentAuthority {
  readonly name = ACCOUNT_TOKEN_AUTHORITY;
  readonly strength = 1;
  readonly #options: AccountTokenOptions;

  constructor(options: AccountTokenOptions) {
    this.#options = options;
  }

  async authorize(request: EnrolmentRequest): Promise<EnrolmentDecision> {
    const checked = await this.verifyEnrolmentProof(request);
    if (!checked.ok) return { ok: false, reason: checked.reason, ...(checked.unavailable === true ? { unavailable: true } : {}) };
    const { account, org, jkt, client_id: clientId } = checked.value;
    return { ok: true, account, org, binding: { jkt, clientId } };
  }

  /** A token's claims, not verified (the session rule's look at `exp` and `jti` before any key); throws when it is no JWT. */
  unverifiedClaims(token: string): JWTPayload {
    return decodeJwt(token);
  }

  /** The background JWKS refresh (see JwksCache.refreshIfDue); returns the fetch failure, if any. */
  refreshKeys(): Promise<string | null> {
    return this.#options.keys.refreshIfDue();
  }

  /**
   * The whole enrol proof: the cloud key, the host key's certificate of it, the cloud key's proof of
   * possession bound to this challenge, then the token, whose `cnf.jkt` must name that cloud key.
   * Local checks run first, so garbage never costs a JWKS fetch.
   */
  async verifyEnrolmentProof(request: EnrolmentRequest): Promise<Verified<AccessClaims>> {
    const proof = request.proof;
    if (typeof proof !== 'object' || proof === null || Array.isArray(proof)) return deny('this relay needs an account-token proof');
    const p = proof as Record<string, unknown>;
    if (p['type'] !== 'account-token') return deny('proof.type must be "account-token"');
    const cloudKey = parseCloudKey(p['cloud_key']);
    if (cloudKey === null) return deny('proof.cloud_key must be a public Ed25519 JWK {kty:"OKP", crv:"Ed25519", x}');
    const jkt = await cloudKeyThumbprint(cloudKey);
    if (!verifyCloudKeyCert(request.host_pubkey, jkt, p['cloud_key_sig']))
      return deny("proof.cloud_key_sig is not the host key's signature over the cloud-key-cert");
    if (!verifyCloudKeyPop(cloudKey, request.challenge, request.host_pubkey, p['cloud_pop']))
      return deny("proof.cloud_pop is not the cloud key's signature over this challenge");
    const token = await this.verifyAccessToken(p['token']);
    if (!token.ok) return token;
    if (token.value.jkt !== jkt) return deny('the token is bound to another cloud key (cnf.jkt)');
    return token;
  }

  /** An access token of this issuer for this relay, within its lifetime, with every claim the relay needs. */
  async verifyAccessToken(token: unknown): Promise<Verified<AccessClaims>> {
    const verified = await this.verifyJwt(token);
    if (!verified.ok) return verified;
    return accessClaims(verified.value);
  }

  /** An operator token for the admin API: issuer, audience and lifetime as for access tokens, and `scope` containing `wanted`. */
  async verifyAdminToken(token: unknown, wanted: string): Promise<Verified<JWTPayload>> {
    const verified = await this.verifyJwt(token);
    if (!verified.ok) return verified;
    const scope = verified.value['scope'];
    if (typeof scope !== 'string' || !scope.split(' ').includes(wanted)) return deny(`the token's scope lacks ${wanted}`);
    return verified;
  }

  /** Signature against the JWKS key named by `kid`, in the algorithm that key allows, `iss`, `aud` exactly this relay, `exp`, `iat`, and `exp − iat` ≤ 15 minutes. */
  async verifyJwt(token: unknown): Promise<Verified<JWTPayload>> {
    if (typeof token !== 'string' || token === '') return deny('the proof lacks a token');
    if (token.length > MAX_TOKEN_CHARS) return deny('the token is too long');
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return deny('the token is not a JWT');
    }
    if (typeof kid !== 'string') return deny('the token header lacks a kid');
    const found = await this.#options.keys.lookup(kid);
    if (!found.ok) return { ok: false, reason: found.reason, ...(found.unavailable ? { unavailable: true } : {}) };
    const { key, algorithms } = found.key;
    let payload: JWTPayload;
    try {
      // only the algorithm the key's JWK allows: never `none`, HMAC, or another use of the same key
      ({ payload } = await jwtVerify(token, key, {
        issuer: this.#options.issuer,
        audience: this.#options.audience,
        algorithms: [...algorithms],
        currentDate: new Date(this.#options.nowMs()),
        clockTolerance: TOKEN_CLOCK_TOLERANCE_S,
        maxTokenAge: MAX_TOKEN_LIFETIME_S,
        requiredClaims: ['exp', 'iat'],
      }));
    } catch (err) {
      if (err instanceof errors.JOSEAlgNotAllowed) return deny(`the token's alg is not the one its signing key (kid) allows (${algorithms[0]})`);
      return deny(joseReason(err));
    }
    // one audience only: a token also valid at another service could be replayed there by a relay
    const aud = payload.aud;
    if (!(aud === this.#options.audience || (Array.isArray(aud) && aud.length === 1))) return deny('the token must name this relay as its only audience');
    const { iat, exp } = payload;
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > MAX_TOKEN_LIFETIME_S) return deny('the token lives longer than 15 minutes');
    return { ok: true, value: payload };
  }
}

function deny(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}

function claimText(payload: JWTPayload, name: string): string | null {
  const value = payload[name];
  return typeof value === 'string' && value !== '' && value.length <= MAX_CLAIM_CHARS ? value : null;
}

function accessClaims(payload: JWTPayload): Verified<AccessClaims> {
  const cnf = payload['cnf'];
  const jkt = typeof cnf === 'object' && cnf !== null ? (cnf as Record<string, unknown>)['jkt'] : undefined;
  const fields = {
    sub: claimText(payload, 'sub'),
    account: claimText(payload, 'account'),
    client_id: claimText(payload, 'client_id'),
    jti: claimText(payload, 'jti'),
  };
  for (const [name, value] of Object.entries(fields)) if (value === null) return deny(`the token lacks a valid "${name}" claim`);
  if (typeof jkt !== 'string' || jkt === '') return deny('the token lacks a "cnf.jkt" claim binding it to a cloud key');
  const org = payload['org'];
  if (org !== undefined && org !== null && claimText(payload, 'org') === null) return deny('the token\'s "org" claim is malformed');
  return {
    ok: true,
    value: {
      sub: fields.sub as string,
      account: fields.account as string,
      client_id: fields.client_id as string,
      jti: fields.jti as string,
      org: typeof org === 'string' ? org : null,
      jkt,
      iat: payload.iat as number,
      exp: payload.exp as number,
    },
  };
}

/** A person-readable reason for a jose failure; never the token or its claims' values. */
function joseReason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return err.claim === 'iat' ? 'the token was issued too long ago' : 'the token has expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return `the token lacks the "${err.claim}" claim`;
    if (err.claim === 'iss') return "the token was not issued by this relay's accounts issuer";
    if (err.claim === 'aud') return 'the token is not for this relay (aud)';
    if (err.claim === 'iat') return 'the token was issued in the future';
    if (err.claim === 'nbf') return 'the token is not valid yet';
    return `the token's "${err.claim}" claim is invalid`;
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the token signature does not verify';
  if (err instanceof errors.JWKSNoMatchingKey) return "the token's signing key (kid) is not in the issuer's key set";
  return 'the token is malformed';
}
