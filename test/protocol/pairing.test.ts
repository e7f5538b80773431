import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import {
  checkPairParty, newPairNonce, newPairToken, normalizePairToken, pairMac, pairTokenKey, pairTranscript, verifyPairMac, type PairParty,
} from '../../src/protocol/pairing.ts';

function party(host: string): PairParty {
  const key = generateSigningKey().publicKey;
  return { host, host_pubkey: key, owner_pubkey: key, nonce: newPairNonce() };
}

test('tokens are 60-bit Crockford XXXX-XXXX-XXXX and typed input is forgiving', () => {
  const fixed = newPairToken(() => new Uint8Array(8).fill(0xff));
  assert.equal(fixed, 'ZZZZ-ZZZZ-ZZZZ');
  assert.equal(newPairToken(() => new Uint8Array(8)), '0000-0000-0000');
  assert.equal(normalizePairToken('abcd efgh jkmn'), 'ABCD-EFGH-JKMN');
  assert.equal(normalizePairToken('ilo0-0000-0000'), '1100-0000-0000');
  assert.equal(normalizePairToken('ABCD-EFGH-JKM'), null);
  assert.equal(normalizePairToken('ABCD-EFGH-JKMU'), null, 'U is not Crockford');
});

test('the token key is scrypt of the token: deterministic, different per token', () => {
  const k1 = pairTokenKey('ABCD-EFGH-JKMN');
  assert.equal(k1.length, 32);
  assert.deepEqual(pairTokenKey('ABCD-EFGH-JKMN'), k1);
  assert.notDeepEqual(pairTokenKey('ABCD-EFGH-JKMP'), k1);
});

test('MACs verify only with the same token, label and transcript', () => {
  const a = party('alpha');
  const b = party('beta');
  const key = pairTokenKey('ABCD-EFGH-JKMN');
  const transcript = pairTranscript(a, b, 'http://10.0.0.2:7373');
  const mac = pairMac(key, 'join', transcript);
  assert.match(mac, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(verifyPairMac(key, 'join', transcript, mac), true);
  assert.equal(verifyPairMac(key, 'accept', transcript, mac), false, 'another label');
  assert.equal(verifyPairMac(pairTokenKey('ABCD-EFGH-JKMP'), 'join', transcript, mac), false, 'another token');
  assert.equal(verifyPairMac(key, 'join', pairTranscript(a, b, 'http://10.0.0.3:7373'), mac), false, 'another addr');
  assert.equal(verifyPairMac(key, 'join', pairTranscript(a, { ...b, host_pubkey: party('x').host_pubkey }, 'http://10.0.0.2:7373'), mac), false, 'another key');
  assert.equal(verifyPairMac(key, 'join', transcript, 'not base64url!'), false);
});

test('the transcript is canonical JSON of proto, a and b + addr', () => {
  const a = party('alpha');
  const b = party('beta');
  const t = JSON.parse(pairTranscript(a, b, 'http://h:1')) as Record<string, unknown>;
  assert.deepEqual(t, { proto: 'agentmbx-pair-token-v1', a, b: { ...b, addr: 'http://h:1' } });
  assert.deepEqual(Object.keys(t), ['a', 'b', 'proto']);
});

test('parties are checked', () => {
  const p = party('alpha');
  assert.deepEqual(checkPairParty({ ...p, extra: 1 }), p);
  assert.equal(checkPairParty({ ...p, host: 'bad host' }), null);
  assert.equal(checkPairParty({ ...p, host_pubkey: 'x' }), null);
  assert.equal(checkPairParty({ ...p, nonce: 'short' }), null);
});
