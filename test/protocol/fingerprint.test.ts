import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { fingerprint, fingerprintMatches, parseFingerprintInput } from '../../src/protocol/fingerprint.ts';
import { fixedKey } from './fixtures.ts';

const key = fixedKey(1).publicKey;
const expected = (() => {
  const hex = createHash('sha256').update(Buffer.from(key, 'base64')).digest('hex').slice(0, 16);
  return `${hex.slice(0, 4)}-${hex.slice(4, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}`;
})();

describe('fingerprint (protocol §1)', () => {
  it('is the first 16 hex digits of SHA-256 of the raw key in four dashed groups', () => {
    assert.equal(fingerprint(key), expected);
    assert.match(fingerprint(key), /^[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}$/);
  });

  it('differs between keys', () => {
    assert.notEqual(fingerprint(fixedKey(2).publicKey), fingerprint(key));
  });

  it('throws on a malformed key', () => {
    assert.throws(() => fingerprint('AAAA'), TypeError);
    assert.throws(() => fingerprint(Buffer.alloc(32).toString('base64url')), TypeError);
  });

  it('accepts forgiving input: any case, with or without dashes, padded by spaces, or the whole key', () => {
    for (const input of [
      expected,
      expected.toUpperCase(),
      expected.replaceAll('-', ''),
      ` ${expected} `,
      key,
      `${key}\n`,
      `${expected.slice(0, 9)}${expected.slice(10)}`,
    ]) {
      assert.equal(parseFingerprintInput(input), expected, input);
      assert.equal(fingerprintMatches(input, key), true);
    }
  });

  it('refuses garbage', () => {
    for (const input of ['', 'hello', expected.slice(0, 18), `${expected}0`, expected.replace(/[0-9a-f]/, 'g'), 'AAAA']) {
      assert.equal(parseFingerprintInput(input), null, input);
      assert.equal(fingerprintMatches(input, key), false);
    }
    assert.equal(fingerprintMatches(fingerprint(fixedKey(2).publicKey), key), false);
  });
});
