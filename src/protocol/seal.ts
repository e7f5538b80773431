// Sealing an envelope body for one recipient host (protocol §4.1): ephemeral X25519, HKDF-SHA256,
// XChaCha20-Poly1305, no associated data. The relay sees everything but the body.
import { hkdfSync, randomBytes } from 'node:crypto';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { fromBase64, fromBase64Exact, toBase64 } from './base64.ts';
import { KEY_BYTES, encPublicFromPrivate, x25519SharedSecret } from './keys.ts';
import { ENC_ALG, ENC_NONCE_BYTES, ENC_TAG_BYTES, type EnvelopeEnc, type UnsignedEnvelopeV3 } from './records/envelope.ts';
import { isPlainObject } from './validate.ts';

const HKDF_INFO_PREFIX = 'agentmbx-enc-1:';
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The envelope with its plaintext body sealed to `recipientEncPub`: `enc` set and `body` replaced
 * by the same base64 ciphertext. Seal before signing. Throws when the recipient key is malformed.
 */
export function sealEnvelopeBody(env: UnsignedEnvelopeV3, recipientEncPub: string, random: (n: number) => Uint8Array = randomBytes): UnsignedEnvelopeV3 {
  const recipient = fromBase64Exact(recipientEncPub, KEY_BYTES);
  if (recipient === null) throw new TypeError('recipient enc key is not a 32-byte base64 key');
  const ephemeralPrivate = toBase64(random(KEY_BYTES));
  const epk = encPublicFromPrivate(ephemeralPrivate);
  const ephemeralRaw = fromBase64Exact(ephemeralPrivate, KEY_BYTES);
  if (epk === null || ephemeralRaw === null) throw new RangeError('randomness must give 32 bytes');
  const shared = x25519SharedSecret(ephemeralRaw, recipient);
  if (shared === null) throw new TypeError('recipient enc key is not usable for X25519');
  const nonce = random(ENC_NONCE_BYTES);
  if (nonce.length !== ENC_NONCE_BYTES) throw new RangeError('randomness must give 24 bytes');
  const key = bodyKey(shared, Buffer.from(epk, 'base64'), env.id);
  const body = toBase64(xchacha20poly1305(key, nonce).encrypt(Buffer.from(env.body, 'utf8')));
  const enc: EnvelopeEnc = { v: 1, alg: ENC_ALG, epk, nonce: toBase64(nonce), body };
  return { ...env, enc, body };
}

/**
 * The plaintext body of a sealed envelope, trying each private enc key in turn (the current one,
 * then retired ones). Null when the envelope is not sealed or no key opens it.
 */
export function openEnvelopeBody(env: Pick<UnsignedEnvelopeV3, 'id' | 'enc'>, encPrivateKeys: readonly string[]): string | null {
  const enc: unknown = env.enc;
  if (!isPlainObject(enc) || enc.v !== 1 || enc.alg !== ENC_ALG || typeof env.id !== 'string') return null;
  const epk = fromBase64Exact(enc.epk, KEY_BYTES);
  const nonce = fromBase64Exact(enc.nonce, ENC_NONCE_BYTES);
  const ciphertext = fromBase64(enc.body);
  if (epk === null || nonce === null || ciphertext === null || ciphertext.length < ENC_TAG_BYTES) return null;
  for (const privateKey of encPrivateKeys) {
    const raw = fromBase64Exact(privateKey, KEY_BYTES);
    const shared = raw === null ? null : x25519SharedSecret(raw, epk);
    if (shared === null) continue;
    try {
      const plain = xchacha20poly1305(bodyKey(shared, epk, env.id), nonce).decrypt(ciphertext);
      return STRICT_UTF8.decode(plain);
    } catch {
      // wrong key or tampered ciphertext: try the next key
    }
  }
  return null;
}

function bodyKey(shared: Uint8Array, epk: Uint8Array, envelopeId: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', shared, epk, HKDF_INFO_PREFIX + envelopeId, 32));
}
