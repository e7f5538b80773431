// A small accounts issuer for tests (design §8): an HTTP server on 127.0.0.1 serving its JWKS at
// /jwks and minting access tokens (EdDSA, RS256, PS256 or ES256 keys) with jose on the test's clock.
// It counts JWKS fetches and can be taken "down" (answers 503) or have its keys rotated.
import { createServer, type Server } from 'node:http';
import { after } from 'node:test';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { generateSigningKey, type SigningKey } from '../../src/protocol/keys.ts';
import { cloudKeyJwk, cloudKeyThumbprint, signCloudKeyCert, signCloudKeyPop } from '../../src/protocol/records/cloud-key.ts';

export const ISSUER = 'https://accounts.test.example';

/** The algorithms a relay accepts from an issuer. */
export type IssuerAlgorithm = 'EdDSA' | 'RS256' | 'PS256' | 'ES256';

interface IssuerKey {
  kid: string;
  alg: IssuerAlgorithm;
  privateKey: CryptoKey;
  /** the private key as a JWK, to sign with it under another algorithm */
  privateJwk: JWK;
  jwk: JWK;
}

export interface MintOptions {
  kid?: string;
  /** the header's alg, signing with the same key material under it (default: the key's own) */
  alg?: string;
  /** the header's kid when it should name another key than the one that signs */
  headerKid?: string;
  /** seconds from iat to exp (default 600) */
  lifetimeS?: number;
  /** seconds added to the clock for iat (negative: issued in the past) */
  iatOffsetS?: number;
  /** claims to set or override; a claim set to undefined is left out */
  claims?: Record<string, unknown>;
}

export class TokenIssuer {
  readonly keys = new Map<string, IssuerKey>();
  /** JWKs served as they are beside the issuer's own keys (keys a relay must ignore) */
  readonly foreignJwks: JWK[] = [];
  jwksFetches = 0;
  down = false;
  url = '';
  readonly #nowMs: () => number;
  readonly #server: Server;
  #jti = 0;

  constructor(nowMs: () => number) {
    this.#nowMs = nowMs;
    this.#server = createServer((request, response) => {
      if (request.url !== '/jwks') {
        response.writeHead(404).end();
        return;
      }
      this.jwksFetches += 1;
      if (this.down) {
        response.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance');
        return;
      }
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: [...[...this.keys.values()].map((k) => k.jwk), ...this.foreignJwks] }));
    });
  }

  get jwksUrl(): string {
    return `${this.url}/jwks`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    if (typeof address !== 'object' || address === null) throw new Error('issuer did not bind');
    this.url = `http://127.0.0.1:${address.port}`;
    after(() => new Promise<void>((resolve) => this.#server.close(() => resolve())));
    return this;
  }

  /** A new signing key; its JWK names `alg` unless `publishAlg` is false (then kty/crv alone say it). */
  async addKey(kid: string, alg: IssuerAlgorithm = 'EdDSA', { publishAlg = true } = {}): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair(alg === 'EdDSA' ? 'Ed25519' : alg, { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid, ...(publishAlg ? { alg } : {}), use: 'sig' };
    this.keys.set(kid, { kid, alg, privateKey, privateJwk: await exportJWK(privateKey), jwk });
  }

  removeKey(kid: string): void {
    this.keys.delete(kid);
  }

  /** The claims of a token from this issuer: iat/exp from the test clock, a fresh jti, then `base` and `options.claims`. */
  claims(audience: string | string[], base: JWTPayload, options: MintOptions = {}): JWTPayload {
    const iat = Math.floor(this.#nowMs() / 1000) + (options.iatOffsetS ?? 0);
    this.#jti += 1;
    const claims: Record<string, unknown> = {
      iss: ISSUER,
      aud: audience,
      iat,
      exp: iat + (options.lifetimeS ?? 600),
      jti: `jti-${this.#jti}`,
      ...base,
      ...options.claims,
    };
    for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
    return claims;
  }

  /** A token signed by `kid` (default: the first key). */
  async mint(audience: string | string[], base: JWTPayload, options: MintOptions = {}): Promise<string> {
    const kid = options.kid ?? [...this.keys.keys()][0];
    const key = kid === undefined ? undefined : this.keys.get(kid);
    if (key === undefined || kid === undefined) throw new Error(`no issuer key ${String(kid)}`);
    const alg = options.alg ?? key.alg;
    const signingKey = alg === key.alg ? key.privateKey : await importJWK(key.privateJwk, alg);
    return new SignJWT(this.claims(audience, base, options)).setProtectedHeader({ alg, kid: options.headerKid ?? kid, typ: 'at+jwt' }).sign(signingKey);
  }
}

export async function startTokenIssuer(nowMs: () => number, kids: string[] = ['k1']): Promise<TokenIssuer> {
  const issuer = await new TokenIssuer(nowMs).start();
  for (const kid of kids) await issuer.addKey(kid);
  return issuer;
}

/** A host's cloud key and the claims of a token bound to it (what `agentmbx login` would obtain). */
export interface CloudIdentity {
  cloudKey: SigningKey;
  jkt: string;
  claims: JWTPayload;
}

export async function cloudIdentity(account: string, sub = 'host-1', extra: JWTPayload = {}): Promise<CloudIdentity> {
  const cloudKey = generateSigningKey();
  const jkt = await cloudKeyThumbprint(cloudKeyJwk(cloudKey.publicKey));
  return { cloudKey, jkt, claims: { sub, account, client_id: `client-${sub}`, cnf: { jkt }, ...extra } };
}

/** The enrol `proof` of design §8 for `hostKey`, answering `challenge`. */
export function accountTokenProof(hostKey: SigningKey, cloudKey: SigningKey, jkt: string, token: string, challenge: string) {
  return {
    type: 'account-token',
    token,
    cloud_key: cloudKeyJwk(cloudKey.publicKey),
    cloud_key_sig: signCloudKeyCert(hostKey, jkt),
    cloud_pop: signCloudKeyPop(cloudKey, challenge, hostKey.publicKey),
  };
}
