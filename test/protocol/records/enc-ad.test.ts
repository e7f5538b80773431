import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateEncKeyPair } from '../../../src/protocol/keys.ts';
import {
  ENC_AD_MAX_FUTURE_MS,
  ENC_AD_MAX_LIFETIME_MS,
  ENC_AD_PUBLISH_LIFETIME_MS,
  checkEncAdV2,
  encAdV1String,
  signEncAdV1,
  signEncAdV2,
  verifyEncAdV1,
  type EncAdV2,
} from '../../../src/protocol/records/enc-ad.ts';
import { BAD_KEYS, DAY_MS, eachChanged, fixedKey, iso, NOW_MS } from '../fixtures.ts';

const hostKey = fixedKey(61);
const encPub = generateEncKeyPair().publicKey;
const ad: EncAdV2 = {
  v: 2,
  type: 'enc-ad',
  host: 'laptop',
  host_pubkey: hostKey.publicKey,
  enc_pub: encPub,
  iat: iso(NOW_MS),
  exp: iso(NOW_MS + ENC_AD_PUBLISH_LIFETIME_MS),
};

function reason(x: unknown, sig?: unknown, nowMs = NOW_MS, caller?: string): string {
  const result = checkEncAdV2(x, sig ?? signEncAdV2(x as EncAdV2, hostKey), nowMs, caller);
  return result.ok ? 'ok' : result.reason;
}

describe('enc-key advertisements v2 (protocol §3.8)', () => {
  it('round-trips and reports iat and exp in milliseconds', () => {
    assert.deepEqual(checkEncAdV2(ad, signEncAdV2(ad, hostKey), NOW_MS, hostKey.publicKey), {
      ok: true,
      ad,
      iatMs: NOW_MS,
      expMs: NOW_MS + ENC_AD_PUBLISH_LIFETIME_MS,
    });
    assert.equal(reason(ad), 'ok');
  });

  it('refuses another signer, a bad signature and a change of any signed member', () => {
    const sig = signEncAdV2(ad, hostKey);
    assert.equal(reason(ad, signEncAdV2(ad, fixedKey(62))), 'bad signature');
    assert.equal(reason(ad, 'AAAA'), 'bad signature');
    const changes: { [K in keyof EncAdV2]?: unknown } = {
      host: 'desktop',
      host_pubkey: fixedKey(62).publicKey,
      enc_pub: generateEncKeyPair().publicKey,
      iat: iso(NOW_MS - 1),
      exp: iso(NOW_MS + DAY_MS),
    };
    for (const [member, tampered] of eachChanged(ad, changes)) assert.equal(reason(tampered, sig), 'bad signature', member);
  });

  it("refuses an ad that is not the caller's own", () => {
    assert.equal(reason(ad, undefined, NOW_MS, fixedKey(62).publicKey), "not the caller's own ad");
  });

  it('refuses an iat more than 5 minutes ahead', () => {
    const edge = { ...ad, iat: iso(NOW_MS + ENC_AD_MAX_FUTURE_MS) };
    assert.equal(reason(edge), 'ok');
    assert.equal(reason({ ...ad, iat: iso(NOW_MS + ENC_AD_MAX_FUTURE_MS + 1) }), 'iat is in the future');
  });

  it('refuses an ad whose exp is not in the future', () => {
    const exp = NOW_MS + ENC_AD_PUBLISH_LIFETIME_MS;
    assert.equal(reason(ad, undefined, exp - 1), 'ok');
    assert.equal(reason(ad, undefined, exp), 'expired');
  });

  it('refuses a lifetime over 90 days', () => {
    assert.equal(reason({ ...ad, exp: iso(NOW_MS + ENC_AD_MAX_LIFETIME_MS) }), 'ok');
    assert.equal(reason({ ...ad, exp: iso(NOW_MS + ENC_AD_MAX_LIFETIME_MS + 1) }), 'lifetime over 90 days');
  });

  it('refuses a malformed ad', () => {
    const cases: unknown[] = [
      { ...ad, v: 1 },
      { ...ad, type: 'ad' },
      { ...ad, host: '' },
      { ...ad, iat: NOW_MS },
      { ...ad, exp: 'later' },
      { ...ad, exp: ad.iat },
      { ...ad, extra: 1 },
      { v: 2, type: 'enc-ad', host: 'laptop', host_pubkey: hostKey.publicKey, enc_pub: encPub, iat: ad.iat },
      ...BAD_KEYS.map((k) => ({ ...ad, host_pubkey: k })),
      ...BAD_KEYS.map((k) => ({ ...ad, enc_pub: k })),
    ];
    for (const x of cases) assert.equal(reason(x), 'malformed', JSON.stringify(x));
    assert.equal(reason(null, 'AAAA'), 'malformed');
    assert.equal(reason([ad], 'AAAA'), 'malformed');
  });
});

describe('enc-key advertisements v1 (legacy)', () => {
  it('signs canonical {v:1, host, enc_pub} and verifies', () => {
    assert.equal(encAdV1String('laptop', encPub), `{"enc_pub":"${encPub}","host":"laptop","v":1}`);
    const sig = signEncAdV1('laptop', encPub, hostKey);
    assert.equal(verifyEncAdV1('laptop', encPub, sig, hostKey.publicKey), true);
  });

  it('refuses another host, enc key, signer or signature', () => {
    const sig = signEncAdV1('laptop', encPub, hostKey);
    assert.equal(verifyEncAdV1('desktop', encPub, sig, hostKey.publicKey), false);
    assert.equal(verifyEncAdV1('laptop', generateEncKeyPair().publicKey, sig, hostKey.publicKey), false);
    assert.equal(verifyEncAdV1('laptop', encPub, sig, fixedKey(62).publicKey), false);
    assert.equal(verifyEncAdV1('laptop', encPub, 'AAAA', hostKey.publicKey), false);
    assert.equal(verifyEncAdV1('laptop', 'AAAA', sig, hostKey.publicKey), false);
    assert.equal(verifyEncAdV1(7, encPub, sig, hostKey.publicKey), false);
  });
});
