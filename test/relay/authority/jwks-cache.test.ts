// The JWKS cache rules of design §8 against a real issuer on 127.0.0.1, on an injected clock.
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { test } from 'node:test';
import {
  httpJwksFetch,
  JWKS_MAX_BYTES,
  JWKS_MIN_FETCH_INTERVAL_MS,
  JWKS_REFRESH_MS,
  JWKS_STALE_LIMIT_MS,
  JwksCache,
  MIN_RSA_KEY_BITS,
  type KeyLookup,
} from '../../../src/relay/authority/jwks-cache.ts';
import { TestClock } from '../../helpers/clock.ts';
import { startTokenIssuer } from '../../helpers/token-issuer.ts';

async function setup(kids = ['k1']) {
  const clock = new TestClock();
  const issuer = await startTokenIssuer(clock.nowMs, kids);
  const cache = new JwksCache({ fetchJwks: httpJwksFetch(issuer.jwksUrl), nowMs: clock.nowMs });
  return { clock, issuer, cache };
}

function refusal(lookup: KeyLookup): { reason: string; unavailable: boolean } {
  assert.equal(lookup.ok, false, 'expected a refusal');
  return lookup as { ok: false; reason: string; unavailable: boolean };
}

test('keys are cached by kid and refreshed every 10 minutes', async () => {
  const { clock, issuer, cache } = await setup();
  assert.equal((await cache.lookup('k1')).ok, true);
  assert.equal(issuer.jwksFetches, 1);
  clock.advance(JWKS_REFRESH_MS - 1);
  assert.equal((await cache.lookup('k1')).ok, true);
  assert.equal(issuer.jwksFetches, 1, 'a known kid inside 10 minutes costs no fetch');
  clock.advance(1);
  assert.equal((await cache.lookup('k1')).ok, true);
  assert.equal(issuer.jwksFetches, 2, 'refreshed after 10 minutes');
});

test('a burst of unknown kids causes at most one fetch a minute', async () => {
  const { clock, issuer, cache } = await setup();
  await cache.lookup('k1');
  clock.advance(JWKS_MIN_FETCH_INTERVAL_MS);
  const burst = await Promise.all(Array.from({ length: 50 }, (_, i) => cache.lookup(`unknown-${i}`)));
  assert.equal(issuer.jwksFetches, 2, 'fifty unknown kids at once: one fetch');
  for (const lookup of burst) assert.equal(refusal(lookup).unavailable, false, 'an unknown kid after a good fetch is a verdict');
  clock.advance(JWKS_MIN_FETCH_INTERVAL_MS - 1);
  for (let i = 0; i < 20; i++) await cache.lookup(`later-${i}`);
  assert.equal(issuer.jwksFetches, 2, 'none inside the minute');
  clock.advance(1);
  await Promise.all(Array.from({ length: 20 }, (_, i) => cache.lookup(`again-${i}`)));
  assert.equal(issuer.jwksFetches, 3, 'one more once the minute is up');
});

test('rotation: a new kid is picked up; a key that left the set stops verifying at once', async () => {
  const { clock, issuer, cache } = await setup();
  assert.equal((await cache.lookup('k1')).ok, true);
  await issuer.addKey('k2');
  issuer.removeKey('k1');
  clock.advance(JWKS_MIN_FETCH_INTERVAL_MS);
  assert.equal((await cache.lookup('k2')).ok, true, 'the unknown kid triggered a fetch');
  const gone = refusal(await cache.lookup('k1'));
  assert.equal(gone.unavailable, false);
  assert.match(gone.reason, /not in the issuer's key set/);
});

test('issuer down: cached keys work for an hour after the last good fetch, then lookups fail closed', async () => {
  const { clock, issuer, cache } = await setup();
  assert.equal((await cache.lookup('k1')).ok, true);
  issuer.down = true;
  clock.advance(JWKS_REFRESH_MS);
  assert.equal((await cache.lookup('k1')).ok, true, 'refresh failed, cached key still used');
  assert.equal(issuer.jwksFetches, 2);
  const unknown = refusal(await cache.lookup('k9'));
  assert.equal(unknown.unavailable, true, 'an unknown kid while the issuer is down cannot be judged');
  assert.match(unknown.reason, /cannot be fetched now \(HTTP 503\)/);
  assert.equal(issuer.jwksFetches, 2, 'failed fetches are also limited to one a minute');

  clock.advance(JWKS_STALE_LIMIT_MS - JWKS_REFRESH_MS);
  assert.equal((await cache.lookup('k1')).ok, true, 'exactly an hour after the last good fetch: still usable');
  clock.advance(1);
  const closed = refusal(await cache.lookup('k1'));
  assert.equal(closed.unavailable, true);
  assert.match(closed.reason, /could not be fetched for over an hour \(HTTP 503\)/);

  issuer.down = false;
  clock.advance(JWKS_MIN_FETCH_INTERVAL_MS);
  assert.equal((await cache.lookup('k1')).ok, true, 'the next allowed fetch recovers');
});

test("the background refresh keeps a quiet relay's keys fresh, so an outage counts from the last refresh", async () => {
  const { clock, issuer, cache } = await setup();
  assert.equal(await cache.refreshIfDue(), null);
  assert.equal(issuer.jwksFetches, 1);
  clock.advance(JWKS_REFRESH_MS - 1);
  assert.equal(await cache.refreshIfDue(), null);
  assert.equal(issuer.jwksFetches, 1, 'not due yet');
  clock.advance(40 * 60_000);
  assert.equal(await cache.refreshIfDue(), null);
  assert.equal(issuer.jwksFetches, 2);
  issuer.down = true;
  clock.advance(JWKS_REFRESH_MS);
  assert.equal(await cache.refreshIfDue(), 'HTTP 503', 'the failure is reported for the log');
  clock.advance(JWKS_STALE_LIMIT_MS - JWKS_REFRESH_MS);
  assert.equal((await cache.lookup('k1')).ok, true, 'an hour after the last successful refresh, not after the first fetch');
});

test('a bad answer is a failed fetch and keeps the last good set; private and foreign keys are ignored', async () => {
  const { clock, cache } = await setup();
  const documents: unknown[] = [];
  let calls = 0;
  const scripted = new JwksCache({
    nowMs: clock.nowMs,
    fetchJwks: async () => {
      calls += 1;
      return documents.shift();
    },
  });
  documents.push({
    keys: [
      { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'good' },
      { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'private', d: 'nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A' },
      { kty: 'EC', crv: 'P-256', x: 'a', y: 'b', kid: 'ec' },
      { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'enc', use: 'enc' },
    ],
  });
  assert.equal((await scripted.lookup('good')).ok, true);
  for (const kid of ['private', 'ec', 'enc']) {
    clock.advance(JWKS_MIN_FETCH_INTERVAL_MS);
    documents.push({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'good' }] });
    assert.equal(refusal(await scripted.lookup(kid)).unavailable, false, `${kid} is not a usable key`);
  }
  clock.advance(JWKS_MIN_FETCH_INTERVAL_MS);
  documents.push({ not: 'a key set' });
  const bad = refusal(await scripted.lookup('new'));
  assert.equal(bad.unavailable, true);
  assert.match(bad.reason, /\(the answer is not a JWKS document\)/);
  assert.equal((await scripted.lookup('good')).ok, true, 'the last good set stays');
  assert.equal(calls, 5);
  assert.equal((await cache.lookup('k1')).ok, true);
});

test('kept: RSA of 2048 bits or more (RS256, PS256 when its JWK says so), EC P-256 (ES256), Ed25519 (EdDSA); all else ignored', async () => {
  const clock = new TestClock();
  const jwk = (key: KeyObject, kid: string, extra: Record<string, string> = {}) => ({ ...key.export({ format: 'jwk' }), kid, ...extra });
  const rsa = generateKeyPairSync('rsa', { modulusLength: MIN_RSA_KEY_BITS }).publicKey;
  const weak = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
  const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey;
  const ed = generateKeyPairSync('ed25519').publicKey;
  const document = {
    keys: [
      jwk(rsa, 'rsa'),
      jwk(rsa, 'rsa-rs256', { alg: 'RS256' }),
      jwk(rsa, 'rsa-ps256', { alg: 'PS256' }),
      jwk(p256, 'p256'),
      jwk(ed, 'ed', { alg: 'EdDSA' }),
      jwk(weak, 'rsa-1024'),
      jwk(rsa, 'rsa-rs512', { alg: 'RS512' }),
      jwk(p256, 'p256-hs256', { alg: 'HS256' }),
      jwk(p384, 'p384'),
      jwk(ed, 'ed-es256', { alg: 'ES256' }),
      { kty: 'oct', k: 'c2VjcmV0LXNoYXJlZC13aXRoLWV2ZXJ5b25l', kid: 'oct', alg: 'HS256' },
    ],
  };
  const cache = new JwksCache({ nowMs: clock.nowMs, fetchJwks: async () => document });
  const algorithms = async (kid: string) => {
    const lookup = await cache.lookup(kid);
    return lookup.ok ? lookup.key.algorithms : refusal(lookup).unavailable ? 'unavailable' : 'ignored';
  };
  assert.deepEqual(
    [await algorithms('rsa'), await algorithms('rsa-rs256'), await algorithms('rsa-ps256'), await algorithms('p256'), await algorithms('ed')],
    [['RS256'], ['RS256'], ['PS256'], ['ES256'], ['EdDSA', 'Ed25519']],
  );
  for (const kid of ['rsa-1024', 'rsa-rs512', 'p256-hs256', 'p384', 'ed-es256', 'oct']) assert.equal(await algorithms(kid), 'ignored', kid);
});

test('the HTTP fetch refuses an oversized or non-JSON answer with a short reason', async () => {
  const { createServer } = await import('node:http');
  const server = createServer((request, response) => {
    if (request.url === '/big') response.end(JSON.stringify({ keys: [], pad: 'x'.repeat(JWKS_MAX_BYTES) }));
    else response.end('<html>secret-looking page</html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    await assert.rejects(httpJwksFetch(`http://127.0.0.1:${port}/big`)(), { message: 'the key set is too large' });
    await assert.rejects(httpJwksFetch(`http://127.0.0.1:${port}/html`)(), { message: 'the answer is not JSON' });
    server.close();
    await assert.rejects(httpJwksFetch(`http://127.0.0.1:${port}/gone`)(), { message: 'cannot connect' });
  } finally {
    server.close();
  }
});
