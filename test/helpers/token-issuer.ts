// A small accounts issuer for tests (design §8): an HTTP server on 127.0.0.1 serving its JWKS at
// /jwks and minting EdDSA access tokens with jose on the test's clock. It counts JWKS fetches and
// can be taken "down" (answers 503) or have its keys rotated.
import { createServer, type Server } from 'node:http';
import { after } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { generateSigningKey, type SigningKey } from '../../src/protocol/keys.ts';
import { cloudKeyJwk, cloudKeyThumbprint, signCloudKeyCert, signCloudKeyPop } from '../../src/protocol/records/cloud-key.ts';

export const ISSUER = 'https://accounts.test.example';

interface IssuerKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export interface MintOptions {
  kid?: string;
  /** seconds from iat to exp (default 600) */
  lifetimeS?: number;
  /** seconds added to the clock for iat (negative: issued in the past) */
  iatOffsetS?: number;
  /** claims to set or override; a claim set to undefined is left out */
  claims?: Record<string, unknown>;
}

export class TokenIssuer {
  readonly keys = new Map<string, IssuerKey>();
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
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [...this.keys.values()].map((k) => k.jwk) }));
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

  async addKey(kid: string): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('Ed25519', { extractable: true });
    this.keys.set(kid, { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'EdDSA', use: 'sig' } });
  }

  removeKey(kid: string): void {
    this.keys.delete(kid);
  }

  /** A token signed by `kid` (default: the first key), with iat/exp from the test clock. */
  async mint(audience: string | string[], base: JWTPayload, options: MintOptions = {}): Promise<string> {
    const kid = options.kid ?? [...this.keys.keys()][0];
    const key = kid === undefined ? undefined : this.keys.get(kid);
    if (key === undefined || kid === undefined) throw new Error(`no issuer key ${String(kid)}`);
    const iat = Math.floor(this.#nowMs() / 1000) + (options.iatOffsetS ?? 0);
    this.#jti += 1;
    const claims: Record<string, unknown> = { iss: ISSUER, aud: audience, iat, exp: iat + (options.lifetimeS ?? 600), jti: `jti-${this.#jti}`, ...base, ...options.claims };
    for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
    return new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' }).sign(key.privateKey);
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
