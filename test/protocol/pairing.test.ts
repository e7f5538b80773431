import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import {
  checkPairJoin,
  checkPairParty,
  newPairNonce,
  newPairToken,
  normalizePairToken,
  pairMac,
  pairTokenKey,
  pairTranscript,
  verifyPairMac,
  type PairParty,
} from '../../src/protocol/pairing.ts';

function party(host: string, ownerPubkey: string | null = null): PairParty {
  return { host, host_pubkey: generateSigningKey().publicKey, owner_pubkey: ownerPubkey, nonce: newPairNonce() };
}

test('tokens are 60-bit Crockford XXXX-XXXX-XXXX and typed input is forgiving', () => {
  const fixed = newPairToken(() => new Uint8Array(8).fill(0xff));
  assert.equal(fixed, 'ZZZZ-ZZZZ-ZZZZ');
  assert.equal(
    newPairToken(() => new Uint8Array(8)),
    '0000-0000-0000',
  );
  assert.equal(normalizePairToken('abcd efgh jkmn'), 'ABCD-EFGH-JKMN');
  assert.equal(normalizePairToken('ilo0-0000-0000'), '1100-0000-0000');
  assert.equal(normalizePairToken('ABCD-EFGH-JKM'), null);
  assert.equal(normalizePairToken('ABCD-EFGH-JKMU'), null, 'U is not Crockford');
});

// Golden vectors of §5, computed apart from this code (Python's hashlib.scrypt, hmac and an HKDF
// written from RFC 5869) over the fixed parties below.
const GOLDEN = {
  tokenKeyHex: '353f3cc81d6b1652256027467c634c9530f95b12989d48cd5115947b2749e9ec',
  a: { host: 'alpha', host_pubkey: 'AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=', nonce: 'AAECAwQFBgcICQoLDA0ODw' },
  b: { host: 'beta', host_pubkey: 'AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=', owner_pubkey: null, nonce: 'EBESExQVFhcYGRobHB0eHw' },
  bAddr: 'http://10.0.0.2:7373',
  owner: 'AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=',
  nullOwner: {
    transcript:
      '{"a":{"host":"alpha","host_pubkey":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","nonce":"AAECAwQFBgcICQoLDA0ODw","owner_pubkey":null},"b":{"addr":"http://10.0.0.2:7373","host":"beta","host_pubkey":"AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=","nonce":"EBESExQVFhcYGRobHB0eHw","owner_pubkey":null},"proto":"agentmbx-pair-token-v1"}',
    join: '8djCBpMY9FvKpDddxt9WphnpZCcMAq-7PrNZxYtSvoY',
    accept: 'X2Ysxe9SPseEy9Ad6J-Sf4bqvK1KOmZKoYNk2rbYVI4',
  },
  withOwner: {
    transcript:
      '{"a":{"host":"alpha","host_pubkey":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","nonce":"AAECAwQFBgcICQoLDA0ODw","owner_pubkey":"AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM="},"b":{"addr":"http://10.0.0.2:7373","host":"beta","host_pubkey":"AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=","nonce":"EBESExQVFhcYGRobHB0eHw","owner_pubkey":null},"proto":"agentmbx-pair-token-v1"}',
    join: 'qVgWvxiUQFoRgVNvs6EqF61GKoRD-vIzzsbSfYrnCXw',
    accept: 'l8DFfmTxPpanShVh13GRnKhrwFNmlb7rabz4lpzBDJw',
  },
} as const;

test('golden: the token key is scrypt over the 12 characters without dashes', () => {
  const key = pairTokenKey('ABCD-EFGH-JKMN');
  assert.equal(key.toString('hex'), GOLDEN.tokenKeyHex);
  assert.deepEqual(pairTokenKey('ABCDEFGHJKMN'), key, 'the bare form gives the same key');
  assert.notDeepEqual(pairTokenKey('ABCD-EFGH-JKMP'), key);
});

for (const [name, owner, vectors] of [
  ['null', null, GOLDEN.nullOwner],
  ['a key', GOLDEN.owner, GOLDEN.withOwner],
] as const) {
  test(`golden: transcript and both MACs with A's owner_pubkey ${name}`, () => {
    const a: PairParty = { ...GOLDEN.a, owner_pubkey: owner };
    const transcript = pairTranscript(a, GOLDEN.b, GOLDEN.bAddr);
    assert.equal(transcript, vectors.transcript);
    const key = Buffer.from(GOLDEN.tokenKeyHex, 'hex');
    assert.equal(pairMac(key, 'join', transcript), vectors.join);
    assert.equal(pairMac(key, 'accept', transcript), vectors.accept);
  });
}

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

test('parties are checked; owner_pubkey is a key or null', () => {
  const p = party('alpha');
  assert.deepEqual(checkPairParty({ ...p, extra: 1 }), p);
  const owned = party('alpha', generateSigningKey().publicKey);
  assert.deepEqual(checkPairParty(owned), owned);
  assert.equal(checkPairParty({ ...p, owner_pubkey: undefined }), null, 'the member must be there');
  assert.equal(checkPairParty({ ...p, owner_pubkey: 'x' }), null);
  assert.equal(checkPairParty({ ...p, host: 'bad host' }), null);
  assert.equal(checkPairParty({ ...p, host_pubkey: 'x' }), null);
  assert.equal(checkPairParty({ ...p, nonce: 'short' }), null);
});

test('a join needs v:1, the party, addr, nonce_a and mac; extra members are ignored', () => {
  const b = party('beta');
  const body = { v: 1, ...b, addr: 'http://10.0.0.2:7373', nonce_a: newPairNonce(), mac: 'm', enc: { anything: true } };
  assert.deepEqual(checkPairJoin(body), { party: b, addr: body.addr, nonce_a: body.nonce_a, mac: 'm' });
  assert.equal(checkPairJoin({ ...body, v: undefined }), null, 'no v');
  assert.equal(checkPairJoin({ ...body, nonce_a: undefined, a_nonce: body.nonce_a }), null, 'the older a_nonce');
  assert.equal(checkPairJoin({ ...body, addr: '' }), null);
  assert.equal(checkPairJoin({ ...body, mac: 7 }), null);
});
