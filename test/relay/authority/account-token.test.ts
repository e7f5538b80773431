// The account-token EnrolmentAuthority (design §8) against a real local issuer: what it grants and
// every reason it refuses.
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { test } from 'node:test';
import { SignJWT, type JWK, type JWTPayload } from 'jose';
import { generateSigningKey, type SigningKey } from '../../../src/protocol/keys.ts';
import { AccountTokenAuthority } from '../../../src/relay/authority/account-token.ts';
import { MAX_TOKEN_LIFETIME_S } from '../../../src/relay/authority/token-limits.ts';
import type { EnrolmentDecision } from '../../../src/relay/authority/enrolment-authority.ts';
import { httpJwksFetch, JWKS_STALE_LIMIT_MS, JwksCache } from '../../../src/relay/authority/jwks-cache.ts';
import { TestClock } from '../../helpers/clock.ts';
import { accountTokenProof, cloudIdentity, ISSUER, startTokenIssuer, type CloudIdentity, type MintOptions } from '../../helpers/token-issuer.ts';

const RELAY = 'https://relay.test.example';

async function setup() {
  const clock = new TestClock();
  const issuer = await startTokenIssuer(clock.nowMs);
  const keys = new JwksCache({ fetchJwks: httpJwksFetch(issuer.jwksUrl), nowMs: clock.nowMs });
  const authority = new AccountTokenAuthority({ issuer: ISSUER, audience: RELAY, keys, nowMs: clock.nowMs });
  const host = generateSigningKey();
  const id = await cloudIdentity('acct-1', 'host-1', { org: 'org-1' });
  /** asks the authority for `hostKey` holding `who`'s cloud key, with a token minted by `options` */
  const ask = async (
    options: MintOptions & { audience?: string | string[]; who?: CloudIdentity; hostKey?: SigningKey; proof?: (p: Record<string, unknown>) => unknown } = {},
  ): Promise<EnrolmentDecision> => {
    const who = options.who ?? id;
    const hostKey = options.hostKey ?? host;
    const token = await issuer.mint(options.audience ?? RELAY, who.claims, options);
    const proof = accountTokenProof(hostKey, who.cloudKey, who.jkt, token, 'the-challenge');
    return authority.authorize({
      host_name: 'macbook',
      host_pubkey: hostKey.publicKey,
      owner_fp: '',
      challenge: 'the-challenge',
      proof: options.proof ? options.proof(proof) : proof,
    });
  };
  return { clock, issuer, authority, host, id, ask };
}

function deniedBecause(decision: EnrolmentDecision, pattern: RegExp): void {
  assert.equal(decision.ok, false, 'expected a denial');
  if (decision.ok) return;
  assert.match(decision.reason, pattern);
  assert.notEqual(decision.unavailable, true, 'a denial, not "unavailable"');
}

test('a fresh token bound to the certified, held cloud key is granted with its account and org', async () => {
  const { authority, ask, id } = await setup();
  assert.deepEqual(await ask(), { ok: true, account: 'acct-1', org: 'org-1', binding: { jkt: id.jkt, clientId: 'client-host-1' } });
  assert.equal(authority.name, 'account-token');
  assert.ok(authority.strength > 0, 'stronger than the host-key challenge');
  assert.deepEqual(await ask({ claims: { org: undefined } }), { ok: true, account: 'acct-1', org: null, binding: { jkt: id.jkt, clientId: 'client-host-1' } });
});

test('tokens for another audience, from another issuer, expired, too long-lived or from the future are refused', async () => {
  const { ask } = await setup();
  deniedBecause(await ask({ audience: 'https://api.test.example' }), /not for this relay/);
  deniedBecause(await ask({ audience: [RELAY, 'https://api.test.example'] }), /only audience/);
  deniedBecause(await ask({ claims: { iss: 'https://evil.example' } }), /issuer/);
  deniedBecause(await ask({ iatOffsetS: -700, lifetimeS: 600 }), /expired/);
  deniedBecause(await ask({ lifetimeS: MAX_TOKEN_LIFETIME_S + 1 }), /longer than 15 minutes/);
  assert.equal((await ask({ lifetimeS: MAX_TOKEN_LIFETIME_S })).ok, true, 'exactly 15 minutes is fine');
  deniedBecause(await ask({ iatOffsetS: 300 }), /in the future/);
});

test('each required claim must be present', async () => {
  const { ask } = await setup();
  for (const claim of ['sub', 'account', 'client_id', 'jti', 'exp', 'iat']) {
    deniedBecause(await ask({ claims: { [claim]: undefined } }), new RegExp(`"${claim}"`));
  }
  deniedBecause(await ask({ claims: { cnf: undefined } }), /cnf\.jkt/);
  deniedBecause(await ask({ claims: { cnf: {} } }), /cnf\.jkt/);
  deniedBecause(await ask({ claims: { account: '' } }), /"account"/);
  deniedBecause(await ask({ claims: { org: 42 } }), /"org"/);
});

test('the token must be bound to the cloud key the host key certified and proved it holds', async () => {
  const { ask, id } = await setup();
  const other = await cloudIdentity('acct-1', 'host-2');
  deniedBecause(await ask({ claims: { cnf: { jkt: other.jkt } } }), /bound to another cloud key/);
  deniedBecause(await ask({ proof: (p) => ({ ...p, cloud_pop: undefined }) }), /cloud_pop/);
  deniedBecause(
    await ask({ proof: (p) => ({ ...p, cloud_pop: accountTokenProof(generateSigningKey(), id.cloudKey, id.jkt, 't', 'another-challenge').cloud_pop }) }),
    /cloud_pop/,
  );
  deniedBecause(
    await ask({ proof: (p) => ({ ...p, cloud_key_sig: accountTokenProof(generateSigningKey(), id.cloudKey, id.jkt, 't', 'the-challenge').cloud_key_sig }) }),
    /cloud_key_sig/,
  );
  deniedBecause(await ask({ proof: (p) => ({ ...p, cloud_key: { ...(p['cloud_key'] as object), d: 'secret' } }) }), /public Ed25519 JWK/);
  deniedBecause(await ask({ proof: (p) => ({ ...p, type: 'host-key' }) }), /account-token/);
  deniedBecause(await ask({ proof: () => undefined }), /needs an account-token proof/);
  deniedBecause(await ask({ proof: (p) => ({ ...p, token: 'not.a.jwt' }) }), /not a JWT/);
});

test('a token and public cloud key of one host replayed by a second host key are refused', async () => {
  const { ask, issuer, authority, id, host } = await setup();
  const token = await issuer.mint(RELAY, id.claims);
  const seen = accountTokenProof(host, id.cloudKey, id.jkt, token, 'the-challenge');
  const thief = generateSigningKey();
  // the thief certifies the public cloud key with its own host key, but cannot sign the pop
  const replay = { ...accountTokenProof(thief, thief, id.jkt, token, 'thief-challenge'), cloud_key: seen.cloud_key };
  const decision = await authority.authorize({ host_name: 'macbook', host_pubkey: thief.publicKey, owner_fp: '', challenge: 'thief-challenge', proof: replay });
  deniedBecause(decision, /cloud_pop/);
  const reused = await authority.authorize({
    host_name: 'macbook',
    host_pubkey: thief.publicKey,
    owner_fp: '',
    challenge: 'the-challenge',
    proof: { ...seen, cloud_key_sig: replay.cloud_key_sig },
  });
  deniedBecause(reused, /cloud_pop/);
  assert.equal((await ask()).ok, true, 'the rightful host still gets in');
});

test('a token signed by a key outside the JWKS, or by a removed key, is refused', async () => {
  const { ask, issuer, clock } = await setup();
  assert.equal((await ask()).ok, true);
  await issuer.addKey('k2');
  clock.advance(60_000);
  assert.equal((await ask({ kid: 'k2' })).ok, true, 'a new kid is picked up');
  issuer.removeKey('k1');
  clock.advance(60_000);
  assert.equal((await ask({ kid: 'k2' })).ok, true);
  await issuer.addKey('k3');
  assert.equal((await ask({ kid: 'k3' })).ok, true, 'this fetch also dropped k1');
  await issuer.addKey('k1');
  deniedBecause(await ask({ kid: 'k1' }), /not in the issuer's key set/);
  // a token whose header names a known kid but that another key signed
  const forged = await issuer.mint(RELAY, {}, { kid: 'k1' });
  const [, payload, sig] = forged.split('.');
  const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: 'k2' })).toString('base64url');
  deniedBecause(await ask({ proof: (p) => ({ ...p, token: `${header}.${payload}.${sig}` }) }), /signature does not verify/);
});

test('issuer down for over an hour: enrolment is unavailable (503), with the reason', async () => {
  const { ask, issuer, clock } = await setup();
  assert.equal((await ask()).ok, true);
  issuer.down = true;
  clock.advance(JWKS_STALE_LIMIT_MS);
  assert.equal((await ask()).ok, true, 'cached keys for the hour');
  clock.advance(1);
  const decision = await ask();
  assert.equal(decision.ok, false);
  assert.ok(!decision.ok && decision.unavailable === true);
  assert.match(decision.ok ? '' : decision.reason, /key set could not be fetched for over an hour \(HTTP 503\)/);
});

/** `token` with its header replaced by `header` (payload and signature kept). */
function withHeader(token: string, header: Record<string, unknown>): string {
  const [, payload, sig] = token.split('.');
  return `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${payload}.${sig}`;
}

/** A JWT signed with node:crypto by an RSA key of `bits` (jose refuses to sign with a key under 2048). */
function rsaSignedToken(bits: number, kid: string, claims: JWTPayload): { jwk: JWK; token: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const input = [{ alg: 'RS256', kid, typ: 'at+jwt' }, claims].map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.');
  const sig = sign('sha256', Buffer.from(input), privateKey).toString('base64url');
  return { jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }, token: `${input}.${sig}` };
}

/** setup() whose issuer also holds an RSA key with no alg in its JWK, an RS256, a PS256 and an ES256 key */
async function setupWithEveryAlgorithm() {
  const context = await setup();
  await context.issuer.addKey('rsa-plain', 'RS256', { publishAlg: false });
  await context.issuer.addKey('rs', 'RS256');
  await context.issuer.addKey('ps', 'PS256');
  await context.issuer.addKey('es', 'ES256');
  return context;
}

test('RS256, PS256 and ES256 issuer keys verify, each in the algorithm its JWK allows', async () => {
  const { ask } = await setupWithEveryAlgorithm();
  for (const kid of ['k1', 'rsa-plain', 'rs', 'ps', 'es']) assert.equal((await ask({ kid })).ok, true, kid);
});

test('a header alg other than the one its key allows is refused, even when that key signed it', async () => {
  const { ask } = await setupWithEveryAlgorithm();
  // the same RSA key material, signing PS256: a valid signature, under an algorithm the JWK does not allow
  deniedBecause(await ask({ kid: 'rsa-plain', alg: 'PS256' }), /alg is not the one its signing key \(kid\) allows \(RS256\)/);
  deniedBecause(await ask({ kid: 'rs', alg: 'PS256' }), /allows \(RS256\)/);
  deniedBecause(await ask({ kid: 'ps', alg: 'RS256' }), /allows \(PS256\)/);
  // signed by a real issuer key, but naming another key's kid with its own alg
  deniedBecause(await ask({ kid: 'es', headerKid: 'k1' }), /allows \(EdDSA\)/);
  deniedBecause(await ask({ kid: 'k1', headerKid: 'es' }), /allows \(ES256\)/);
});

test('alg none, HMAC with a JWK as the secret, and an oct key in the JWKS are refused', async () => {
  const { ask, issuer, id } = await setup();
  await issuer.addKey('rs', 'RS256');
  const claims = issuer.claims(RELAY, id.claims);
  const unsecured = `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'k1' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
  deniedBecause(await ask({ proof: (p) => ({ ...p, token: unsecured }) }), /alg is not the one/);
  for (const kid of ['k1', 'rs']) {
    const publicJwk = issuer.keys.get(kid)?.jwk;
    const hmac = await new SignJWT(issuer.claims(RELAY, id.claims))
      .setProtectedHeader({ alg: 'HS256', kid })
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    deniedBecause(await ask({ proof: (p) => ({ ...p, token: hmac }) }), /alg is not the one/);
  }
  const secret = new TextEncoder().encode('a secret the whole world can read in the key set');
  issuer.foreignJwks.push({ kty: 'oct', k: Buffer.from(secret).toString('base64url'), kid: 'shared', alg: 'HS256', use: 'sig' });
  const shared = await new SignJWT(issuer.claims(RELAY, id.claims)).setProtectedHeader({ alg: 'HS256', kid: 'shared' }).sign(secret);
  deniedBecause(await ask({ proof: (p) => ({ ...p, token: shared }) }), /not in the issuer's key set/);
  deniedBecause(await ask({ proof: (p) => ({ ...p, token: withHeader(shared, { alg: 'EdDSA', kid: 'shared' }) }) }), /not in the issuer's key set/);
});

test('an RSA key under 2048 bits is refused; the same signing path with 2048 bits is not', async () => {
  const { ask, issuer, id } = await setup();
  const strong = rsaSignedToken(2048, 'rsa-2048', issuer.claims(RELAY, id.claims));
  const weak = rsaSignedToken(1024, 'rsa-1024', issuer.claims(RELAY, id.claims));
  issuer.foreignJwks.push(strong.jwk, weak.jwk);
  assert.equal((await ask({ proof: (p) => ({ ...p, token: strong.token }) })).ok, true);
  deniedBecause(await ask({ proof: (p) => ({ ...p, token: weak.token }) }), /not in the issuer's key set/);
});
