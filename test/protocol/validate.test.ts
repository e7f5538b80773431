import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  hasControlCharacters,
  hasExactKeys,
  isIsoTime,
  isPlainObject,
  isPositiveSafeInteger,
  isSha256Hex,
  isStringOfLength,
  parseIsoMs,
  parseJsonWire,
  signCanonical,
  verifyCanonical,
} from '../../src/protocol/validate.ts';
import { fixedKey, NOW_MS } from './fixtures.ts';

describe('record validation helpers', () => {
  it('isIsoTime takes exactly toISOString output', () => {
    assert.equal(isIsoTime(new Date(NOW_MS).toISOString()), true);
    assert.equal(parseIsoMs('2026-12-02T12:00:00.000Z'), NOW_MS);
    for (const s of [
      '2026-12-02T12:00:00Z',
      '2026-12-02T12:00:00.000+00:00',
      '2026-12-02',
      '2026-12-02t12:00:00.000z',
      '2026-02-30T00:00:00.000Z',
      '2026-12-02T24:00:00.000Z',
      ' 2026-12-02T12:00:00.000Z',
      '+012026-12-02T12:00:00.000Z',
      String(NOW_MS),
      NOW_MS,
      null,
    ]) {
      assert.equal(isIsoTime(s), false, String(s));
      assert.equal(parseIsoMs(s), null);
    }
  });

  it('isPlainObject refuses arrays, null, class instances and primitives', () => {
    assert.equal(isPlainObject({}), true);
    assert.equal(isPlainObject(Object.create(null)), true);
    assert.equal(isPlainObject(JSON.parse('{"__proto__":{"a":1}}')), true);
    for (const v of [[], null, new Date(), Buffer.alloc(1), 'x', 1, undefined]) assert.equal(isPlainObject(v), false);
  });

  it('hasExactKeys wants every required key and nothing unknown', () => {
    assert.equal(hasExactKeys({ a: 1, b: 2 }, ['a', 'b']), true);
    assert.equal(hasExactKeys({ a: 1 }, ['a'], ['b']), true);
    assert.equal(hasExactKeys({ a: 1, b: 2 }, ['a'], ['b']), true);
    assert.equal(hasExactKeys({ a: 1 }, ['a', 'b']), false);
    assert.equal(hasExactKeys({ a: 1, c: 3 }, ['a'], ['b']), false);
    assert.equal(hasExactKeys(JSON.parse('{"a":1,"__proto__":2}') as Record<string, unknown>, ['a']), false);
  });

  it('small predicates', () => {
    assert.equal(isStringOfLength('abc', 1, 3), true);
    assert.equal(isStringOfLength('abcd', 1, 3), false);
    assert.equal(isStringOfLength('', 1, 3), false);
    assert.equal(isStringOfLength(3, 0, 3), false);
    assert.equal(isPositiveSafeInteger(1), true);
    for (const n of [0, -1, 1.5, 2 ** 53, Number.NaN, '1']) assert.equal(isPositiveSafeInteger(n), false);
    assert.equal(hasControlCharacters('tab\there'), true);
    assert.equal(hasControlCharacters('del\u007f'), true);
    assert.equal(hasControlCharacters('c1\u0085'), true);
    assert.equal(hasControlCharacters('fine — ünïcode ✓'), false);
    assert.equal(isSha256Hex('a'.repeat(64)), true);
    assert.equal(isSha256Hex('A'.repeat(64)), false);
    assert.equal(isSha256Hex('a'.repeat(63)), false);
  });

  it('parseJsonWire takes strict UTF-8 JSON only', () => {
    assert.deepEqual(parseJsonWire(Buffer.from('{"a":"é"}')), { a: 'é' });
    assert.deepEqual(parseJsonWire('[1]'), [1]);
    assert.equal(parseJsonWire(Buffer.from([0x7b, 0xff, 0x7d])), undefined);
    assert.equal(parseJsonWire(Buffer.from('\ufeff{}')), undefined);
    assert.equal(parseJsonWire('{'), undefined);
    assert.equal(parseJsonWire(''), undefined);
  });

  it('signCanonical / verifyCanonical sign the canonical form, whatever the member order', () => {
    const key = fixedKey(9);
    const sig = signCanonical({ b: 1, a: 2 }, key);
    assert.equal(verifyCanonical(key.publicKey, { a: 2, b: 1 }, sig), true);
    assert.equal(verifyCanonical(key.publicKey, { a: 2, b: 2 }, sig), false);
    assert.equal(verifyCanonical(fixedKey(8).publicKey, { a: 2, b: 1 }, sig), false);
    assert.equal(verifyCanonical(key.publicKey, { a: Number.NaN }, sig), false);
  });
});
