import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, diffieHellman, hkdfSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { generateEncKeyPair } from '../../src/protocol/keys.ts';
import { ENC_ALG, type EnvelopeEnc } from '../../src/protocol/records/envelope.ts';
import { openEnvelopeBody, sealEnvelopeBody } from '../../src/protocol/seal.ts';
import { unsignedEnvelope } from './fixtures.ts';

const recipient = generateEncKeyPair();
const retired = generateEncKeyPair();
const stranger = generateEncKeyPair();
const plain = unsignedEnvelope();

function flipFirstByte(base64: string): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[0] = (bytes[0] ?? 0) ^ 1;
  return bytes.toString('base64');
}

function sealedEnc(env: ReturnType<typeof sealEnvelopeBody>): EnvelopeEnc {
  assert.ok(env.enc !== null);
  return env.enc;
}

describe('sealing an envelope body (protocol §4.1)', () => {
  it('round-trips and sets enc and body to the same ciphertext', () => {
    const sealed = sealEnvelopeBody(plain, recipient.publicKey);
    const enc = sealedEnc(sealed);
    assert.equal(enc.v, 1);
    assert.equal(enc.alg, ENC_ALG);
    assert.equal(Buffer.from(enc.epk, 'base64').length, 32);
    assert.equal(Buffer.from(enc.nonce, 'base64').length, 24);
    assert.equal(Buffer.from(enc.body, 'base64').length, Buffer.byteLength(plain.body) + 16);
    assert.equal(sealed.body, enc.body);
    assert.equal(sealed.subject, plain.subject);
    assert.equal(openEnvelopeBody(sealed, [recipient.privateKey]), plain.body);
  });

  it('follows the construction of §4.1 byte for byte (X25519, HKDF salt = epk, info = "agentmbx-enc-1:" + id)', () => {
    const sealed = sealEnvelopeBody(plain, recipient.publicKey);
    const enc = sealedEnc(sealed);
    const shared = diffieHellman({
      privateKey: createPrivateKey({
        key: Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), Buffer.from(recipient.privateKey, 'base64')]),
        format: 'der',
        type: 'pkcs8',
      }),
      publicKey: createPublicKey({
        key: Buffer.concat([Buffer.from('302a300506032b656e032100', 'hex'), Buffer.from(enc.epk, 'base64')]),
        format: 'der',
        type: 'spki',
      }),
    });
    const key = new Uint8Array(hkdfSync('sha256', shared, Buffer.from(enc.epk, 'base64'), `agentmbx-enc-1:${plain.id}`, 32));
    const opened = xchacha20poly1305(key, Buffer.from(enc.nonce, 'base64')).decrypt(Buffer.from(enc.body, 'base64'));
    assert.equal(Buffer.from(opened).toString('utf8'), plain.body);
  });

  it('uses fresh randomness per envelope, and the injected source when given', () => {
    const a = sealEnvelopeBody(plain, recipient.publicKey);
    const b = sealEnvelopeBody(plain, recipient.publicKey);
    assert.notEqual(sealedEnc(a).epk, sealedEnc(b).epk);
    assert.notEqual(a.body, b.body);
    const fixed = (n: number): Uint8Array => new Uint8Array(n).fill(n);
    assert.deepEqual(sealEnvelopeBody(plain, recipient.publicKey, fixed), sealEnvelopeBody(plain, recipient.publicKey, fixed));
  });

  it('refuses a tampered ciphertext, epk, nonce or envelope id', () => {
    const sealed = sealEnvelopeBody(plain, recipient.publicKey);
    const enc = sealedEnc(sealed);
    const keys = [recipient.privateKey];
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, body: flipFirstByte(enc.body) } }, keys), null);
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, epk: flipFirstByte(enc.epk) } }, keys), null);
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, nonce: flipFirstByte(enc.nonce) } }, keys), null);
    assert.equal(openEnvelopeBody({ ...sealed, id: '01KBFZ2V0000000000000000AC' }, keys), null);
    const tag = Buffer.from(enc.body, 'base64');
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, body: tag.subarray(0, tag.length - 1).toString('base64') } }, keys), null);
  });

  it('refuses a wrong key, and opens with a retired key further down the list', () => {
    const sealed = sealEnvelopeBody(plain, retired.publicKey);
    assert.equal(openEnvelopeBody(sealed, [recipient.privateKey]), null);
    assert.equal(openEnvelopeBody(sealed, [stranger.privateKey, recipient.privateKey]), null);
    assert.equal(openEnvelopeBody(sealed, []), null);
    assert.equal(openEnvelopeBody(sealed, ['not a key', recipient.privateKey, retired.privateKey]), plain.body);
  });

  it('opens nothing that is not sealed or is malformed', () => {
    const sealed = sealEnvelopeBody(plain, recipient.publicKey);
    const enc = sealedEnc(sealed);
    const keys = [recipient.privateKey];
    assert.equal(openEnvelopeBody(plain, keys), null);
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, alg: 'other' as typeof ENC_ALG } }, keys), null);
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, v: 2 as 1 } }, keys), null);
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, nonce: 'AAAA' } }, keys), null);
    assert.equal(openEnvelopeBody({ ...sealed, enc: { ...enc, body: 'AAAA' } }, keys), null);
  });

  it('refuses to seal to a malformed key', () => {
    assert.throws(() => sealEnvelopeBody(plain, 'AAAA'), TypeError);
  });
});
