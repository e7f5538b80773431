// The cloud key records of design §8: the RFC 7638 thumbprint, the strict public JWK, the host
// key's certificate and the cloud key's proof of possession.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import {
  cloudKeyJwk,
  cloudKeyThumbprint,
  parseCloudKey,
  signCloudKeyCert,
  signCloudKeyPop,
  verifyCloudKeyCert,
  verifyCloudKeyPop,
} from '../../../src/protocol/records/cloud-key.ts';

test('the thumbprint is RFC 7638 over the Ed25519 JWK (RFC 8037 §A.3 vector)', async () => {
  const jwk = parseCloudKey({ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' });
  assert.ok(jwk);
  assert.equal(await cloudKeyThumbprint(jwk), 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
});

test('a cloud key must be exactly a public Ed25519 JWK', () => {
  const key = generateSigningKey();
  const jwk = cloudKeyJwk(key.publicKey);
  assert.deepEqual(parseCloudKey(jwk), jwk);
  assert.equal(parseCloudKey({ ...jwk, d: 'AAAA' }), null, 'a private member is refused');
  assert.equal(parseCloudKey({ ...jwk, crv: 'X25519' }), null);
  assert.equal(parseCloudKey({ ...jwk, kty: 'EC' }), null);
  assert.equal(parseCloudKey({ ...jwk, x: jwk.x.slice(0, -2) }), null, 'x must hold 32 bytes');
  assert.equal(parseCloudKey({ ...jwk, x: `${jwk.x}=` }), null, 'x is unpadded base64url');
  assert.equal(parseCloudKey({ kty: 'OKP', crv: 'Ed25519' }), null);
  assert.equal(parseCloudKey('not a key'), null);
  assert.equal(parseCloudKey([jwk]), null);
});

test('the certificate binds the cloud key to one host key; the pop binds it to one challenge and host', async () => {
  const host = generateSigningKey();
  const other = generateSigningKey();
  const cloud = generateSigningKey();
  const jwk = cloudKeyJwk(cloud.publicKey);
  const jkt = await cloudKeyThumbprint(jwk);

  const cert = signCloudKeyCert(host, jkt);
  assert.equal(verifyCloudKeyCert(host.publicKey, jkt, cert), true);
  assert.equal(verifyCloudKeyCert(other.publicKey, jkt, cert), false, 'another host key did not certify it');
  assert.equal(verifyCloudKeyCert(host.publicKey, await cloudKeyThumbprint(cloudKeyJwk(other.publicKey)), cert), false);

  const pop = signCloudKeyPop(cloud, 'challenge-1', host.publicKey);
  assert.equal(verifyCloudKeyPop(jwk, 'challenge-1', host.publicKey, pop), true);
  assert.equal(verifyCloudKeyPop(jwk, 'challenge-2', host.publicKey, pop), false, 'bound to the challenge');
  assert.equal(verifyCloudKeyPop(jwk, 'challenge-1', other.publicKey, pop), false, 'bound to the host key');
  assert.equal(verifyCloudKeyPop(jwk, 'challenge-1', host.publicKey, signCloudKeyPop(host, 'challenge-1', host.publicKey)), false, 'signed by the cloud key');
  assert.equal(verifyCloudKeyPop(jwk, 'challenge-1', host.publicKey, 'garbage'), false);
});
