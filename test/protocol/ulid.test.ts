import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUlid, newUlid, ulidTimeMs } from '../../src/protocol/ulid.ts';
import { NOW_MS } from './fixtures.ts';

const zeros = (n: number): Uint8Array => new Uint8Array(n);
const fill =
  (value: number) =>
  (n: number): Uint8Array =>
    new Uint8Array(n).fill(value);

// The module keeps the last id's state, so each test uses its own, later, millisecond range.
describe('ULID (protocol §1)', () => {
  it('encodes 48-bit time then 80 random bits in 26 Crockford base32 characters', () => {
    const id = newUlid(NOW_MS + 1_000_000, zeros);
    assert.equal(id.length, 26);
    assert.equal(isUlid(id), true);
    assert.equal(ulidTimeMs(id), NOW_MS + 1_000_000);
    assert.equal(id.slice(10), '0000000000000000');
    assert.equal(newUlid(NOW_MS + 2_000_000, fill(0xff)).slice(10), 'ZZZZZZZZZZZZZZZZ');
  });

  it('is monotonic within one millisecond: the random part counts up', () => {
    const t = NOW_MS + 3_000_000;
    const a = newUlid(t, zeros);
    const b = newUlid(t, fill(0xaa));
    const c = newUlid(t, fill(0x01));
    assert.equal(a.slice(10), '0000000000000000');
    assert.equal(b.slice(10), '0000000000000001');
    assert.equal(c.slice(10), '0000000000000002');
    assert.ok(a < b && b < c);
    assert.equal(ulidTimeMs(c), t);
  });

  it('stays increasing when the clock steps back', () => {
    const t = NOW_MS + 4_000_000;
    const a = newUlid(t, zeros);
    const b = newUlid(t - 5000, zeros);
    assert.ok(b > a);
    assert.equal(ulidTimeMs(b), t);
  });

  it('moves one millisecond on when the random part would wrap', () => {
    const t = NOW_MS + 5_000_000;
    const a = newUlid(t, fill(0xff));
    const b = newUlid(t, zeros);
    assert.ok(b > a);
    assert.equal(ulidTimeMs(b), t + 1);
  });

  it('uses fresh randomness in a new millisecond', () => {
    const a = newUlid(NOW_MS + 6_000_000);
    const b = newUlid(NOW_MS + 6_000_001);
    assert.notEqual(a.slice(10), b.slice(10));
    assert.ok(b > a);
  });

  it('refuses out-of-range times and short randomness', () => {
    assert.throws(() => newUlid(-1), RangeError);
    assert.throws(() => newUlid(2 ** 48), RangeError);
    assert.throws(() => newUlid(Number.NaN), RangeError);
    assert.throws(() => newUlid(NOW_MS + 7_000_000, () => new Uint8Array(3)), RangeError);
  });

  it('isUlid refuses wrong length, lowercase, I/L/O/U and a first character above 7', () => {
    assert.equal(isUlid('01ARZ3NDEKTSV4RRFFQ69G5FAV'), true);
    for (const s of [
      '01ARZ3NDEKTSV4RRFFQ69G5FA',
      '01ARZ3NDEKTSV4RRFFQ69G5FAVX',
      '01arz3ndektsv4rrffq69g5fav',
      '01ARZ3NDEKTSV4RRFFQ69G5FAI',
      '01ARZ3NDEKTSV4RRFFQ69G5FAL',
      '01ARZ3NDEKTSV4RRFFQ69G5FAO',
      '01ARZ3NDEKTSV4RRFFQ69G5FAU',
      '81ARZ3NDEKTSV4RRFFQ69G5FAV',
      42,
      null,
    ]) {
      assert.equal(isUlid(s), false, String(s));
    }
    assert.equal(ulidTimeMs('nope'), null);
  });

  it('reads the time of the ULID specification example', () => {
    assert.equal(ulidTimeMs('01ARYZ6S41TSV4RRFFQ69G5FAV'), 1469918176385);
  });
});
