import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  encPublicFromPrivate,
  generateEncKeyPair,
  generateSigningKey,
  isEncPublicKey,
  isPublicKey,
  signingKeyFromSeed,
  verifySignature,
} from '../../src/protocol/keys.ts';
import { BAD_KEYS } from './fixtures.ts';

describe('keys (protocol §1)', () => {
  it('a signing key is stable from its seed, and signs verifiably', () => {
    const key = generateSigningKey();
    const again = signingKeyFromSeed(key.exportSeed());
    assert.equal(again?.publicKey, key.publicKey);
    assert.equal(Buffer.from(key.publicKey, 'base64').length, 32);
    const sig = key.sign('hello');
    assert.equal(Buffer.from(sig, 'base64').length, 64);
    assert.equal(verifySignature(key.publicKey, 'hello', sig), true);
    assert.equal(verifySignature(key.publicKey, 'hellO', sig), false);
    assert.equal(verifySignature(generateSigningKey().publicKey, 'hello', sig), false);
  });

  it('never shows the seed when a key is serialized', () => {
    const key = generateSigningKey();
    const text = JSON.stringify({ key });
    assert.equal(text.includes(key.exportSeed()), false);
    assert.equal(text.includes(Buffer.from(key.exportSeed(), 'base64').toString('hex')), false);
  });

  it('refuses malformed seeds, keys and signatures', () => {
    assert.equal(signingKeyFromSeed('AAAA'), null);
    for (const k of BAD_KEYS) {
      assert.equal(isPublicKey(k), false, String(k));
      assert.equal(isEncPublicKey(k), false, String(k));
    }
    const key = generateSigningKey();
    for (const sig of ['', 'AAAA', key.sign('x').replace(/=+$/, ''), 7, null]) assert.equal(verifySignature(key.publicKey, 'x', sig), false);
    assert.equal(verifySignature('AAAA', 'x', key.sign('x')), false);
  });

  it('an X25519 pair: the public key follows from the private one', () => {
    const pair = generateEncKeyPair();
    assert.equal(encPublicFromPrivate(pair.privateKey), pair.publicKey);
    assert.equal(encPublicFromPrivate('AAAA'), null);
  });
});

it('a public key has one spelling: non-canonical and off-curve encodings are refused', () => {
  const key = (fill: (b: Buffer) => void): string => {
    const raw = Buffer.alloc(32);
    fill(raw);
    return raw.toString('base64');
  };
  assert.equal(
    isPublicKey(
      key((b) => {
        b.fill(0xff);
        b[31] = 0x7f;
      }),
    ),
    false,
    'y ≥ p is a second spelling of y − p',
  );
  assert.equal(
    isPublicKey(
      key((b) => {
        b[0] = 0xee;
        b.fill(0xff, 1);
        b[31] = 0x7f;
      }),
    ),
    false,
    'y = p',
  );
  assert.equal(
    isPublicKey(
      key((b) => {
        b[0] = 2;
      }),
    ),
    false,
    'y = 2 has no x on the curve',
  );
  assert.equal(
    isPublicKey(
      key((b) => {
        b[0] = 1;
      }),
    ),
    true,
    'the neutral point is a point',
  );
  assert.equal(
    isPublicKey(
      key((b) => {
        b[0] = 1;
        b[31] = 0x80;
      }),
    ),
    false,
    'x = 0 with the sign bit set',
  );
  for (let i = 0; i < 50; i += 1) assert.equal(isPublicKey(generateSigningKey().publicKey), true);
});
