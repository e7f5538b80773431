import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromBase64, fromBase64Exact, fromBase64Url, toBase64, toBase64Url } from '../../src/protocol/base64.ts';

describe('strict base64 (protocol §7.17)', () => {
  it('round-trips every length 0–40 with the standard alphabet and padding', () => {
    for (let n = 0; n <= 40; n++) {
      const bytes = Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + n) & 255));
      const text = toBase64(bytes);
      assert.deepEqual(fromBase64(text), bytes);
    }
  });

  it('refuses non-canonical trailing bits', () => {
    assert.deepEqual(fromBase64('AA=='), Buffer.from([0]));
    assert.equal(fromBase64('AB=='), null);
    assert.deepEqual(fromBase64('AAA='), Buffer.from([0, 0]));
    assert.equal(fromBase64('AAB='), null);
  });

  it('refuses missing padding, the url alphabet, white space and junk', () => {
    for (const text of ['AA', 'AAA', 'A', '-_8=', 'AA==\n', ' AA==', 'AA ==', 'AA=A', 'AA===', '====', '+/8=\r\n']) {
      assert.equal(fromBase64(text), null, JSON.stringify(text));
    }
    assert.deepEqual(fromBase64('+/8='), Buffer.from([0xfb, 0xff]));
  });

  it('accepts exactly the canonical spelling: fuzzed against the grammar of padded standard base64', () => {
    const grammar = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
    const alphabet = 'AQgw+/=-_ \n.é';
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 20_000; round += 1) {
      const text = Array.from({ length: next(13) }, () => alphabet[next(alphabet.length)]).join('');
      const decoded = fromBase64(text);
      const canonical = grammar.test(text) && Buffer.from(text, 'base64').toString('base64') === text;
      assert.equal(decoded !== null, canonical, JSON.stringify(text));
    }
  });

  it('refuses what is not a string', () => {
    for (const value of [undefined, null, 1, ['AA=='], Buffer.from('AA==')]) assert.equal(fromBase64(value), null);
  });

  it('fromBase64Exact checks the decoded length', () => {
    const key = toBase64(Buffer.alloc(32, 7));
    assert.equal(fromBase64Exact(key, 32)?.length, 32);
    assert.equal(fromBase64Exact(key, 31), null);
    assert.equal(fromBase64Exact(toBase64(Buffer.alloc(33)), 32), null);
  });
});

describe('strict base64url (nonces, MACs)', () => {
  it('round-trips without padding', () => {
    const bytes = Buffer.from([0xfb, 0xff, 0xfe, 1, 2]);
    const text = toBase64Url(bytes);
    assert.equal(text, '-__-AQI');
    assert.deepEqual(fromBase64Url(text), bytes);
    assert.deepEqual(fromBase64Url(''), Buffer.alloc(0));
  });

  it('refuses padding, the standard alphabet, an impossible length and non-canonical bits', () => {
    for (const text of ['AA==', '+/8', 'A', 'AAAAA', 'AB', 'AAB', ' AA', 'AA\n', 42]) {
      assert.equal(fromBase64Url(text), null, JSON.stringify(text));
    }
  });
});
