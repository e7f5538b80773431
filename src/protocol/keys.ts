// Ed25519 (host and relay keys) and X25519 (enc keys) as raw 32-byte values (protocol.md §1),
// backed by node:crypto KeyObjects.
import {
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject,
} from 'node:crypto';
import { fromBase64Exact, toBase64 } from './base64.ts';

const ED25519_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');
const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');
const X25519_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const X25519_SPKI = Buffer.from('302a300506032b656e032100', 'hex');

export const KEY_BYTES = 32;
export const SIGNATURE_BYTES = 64;

/** Verified public keys are cached by their base64 text; the cache is capped (entries beyond it are evicted oldest first). */
export const PUBLIC_KEY_CACHE_MAX = 4096;
const publicKeyCache = new Map<string, KeyObject>();
/**
 * Texts already found to be canonical Ed25519 keys, kept as text only (about 100 bytes each), capped
 * the same way. A relay checks the key of every request: with more hosts than PUBLIC_KEY_CACHE_MAX
 * pulling in turn (20,000 holding their pulls), each check missed that cache and cost two BigInt
 * exponentiations, a fifth of the event loop's work per pull.
 */
export const CANONICAL_KEY_CACHE_MAX = 50_000;
const canonicalKeys = new Set<string>();

export interface SigningKey {
  /** base64 of the raw 32-byte public key */
  readonly publicKey: string;
  /** base64 of the raw 32-byte seed; never log or echo it */
  exportSeed(): string;
  sign(text: string): string;
}

class Ed25519SigningKey implements SigningKey {
  readonly publicKey: string;
  readonly #key: KeyObject;
  readonly #seed: Buffer;
  constructor(seed: Buffer) {
    this.#seed = Buffer.from(seed);
    this.#key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8, seed]), format: 'der', type: 'pkcs8' });
    this.publicKey = toBase64(rawPublic(createPublicKey(this.#key)));
  }
  exportSeed(): string {
    return toBase64(this.#seed);
  }
  sign(text: string): string {
    return toBase64(cryptoSign(null, Buffer.from(text, 'utf8'), this.#key));
  }
  toJSON(): string {
    return `[signing key ${this.publicKey}]`;
  }
}

function rawPublic(key: KeyObject): Buffer {
  return key.export({ format: 'der', type: 'spki' }).subarray(-KEY_BYTES);
}

export function generateSigningKey(): SigningKey {
  return new Ed25519SigningKey(randomBytes(KEY_BYTES));
}

/** A signing key from its base64 seed; null when the text is not a 32-byte strict base64 seed. */
export function signingKeyFromSeed(seedBase64: string): SigningKey | null {
  const seed = fromBase64Exact(seedBase64.trim(), KEY_BYTES);
  return seed === null ? null : new Ed25519SigningKey(seed);
}

/** True when `publicKey` is strict base64 of 32 bytes that form a valid Ed25519 point. */
export function isPublicKey(publicKey: unknown): publicKey is string {
  return typeof publicKey === 'string' && canonicalKey(publicKey) !== null;
}

/** The raw bytes of `publicKey` when it is strict base64 of a canonical Ed25519 point, else null. */
function canonicalKey(publicKey: string): Uint8Array | null {
  const raw = fromBase64Exact(publicKey, KEY_BYTES);
  if (raw === null) return null;
  if (canonicalKeys.has(publicKey)) return raw;
  if (!isCanonicalPoint(raw)) return null;
  makeRoom(canonicalKeys, CANONICAL_KEY_CACHE_MAX);
  canonicalKeys.add(publicKey);
  return raw;
}

/** Drops the oldest entry of `kept` when it holds `max` already (before one more goes in). */
function makeRoom(kept: Set<string> | Map<string, unknown>, max: number): void {
  if (kept.size < max) return;
  const oldest = kept.keys().next().value;
  if (oldest !== undefined) kept.delete(oldest);
}

const P = 2n ** 255n - 19n;

function modPow(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = base % P;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if ((e & 1n) === 1n) result = (result * b) % P;
    b = (b * b) % P;
  }
  return result;
}

const D = (((-121665n * modPow(121666n, P - 2n)) % P) + P) % P;

/**
 * Whether 32 bytes are the one canonical encoding of a point on Ed25519 (RFC 8032 §5.1.3): y below
 * p, x² = (y² − 1) / (d·y² + 1) a square, and no sign bit on x = 0. Node accepts any 32 bytes as a
 * key; without this, a few points had a second spelling (and a revoked key could come back).
 */
function isCanonicalPoint(raw: Uint8Array): boolean {
  const bytes = Uint8Array.from(raw);
  const sign = (bytes[31] ?? 0) >> 7;
  bytes[31] = (bytes[31] ?? 0) & 0x7f;
  const y = BigInt(`0x${Buffer.from(bytes).reverse().toString('hex')}`);
  if (y >= P) return false;
  const y2 = (y * y) % P;
  const x2 = (((y2 - 1n + P) % P) * modPow((D * y2 + 1n) % P, P - 2n)) % P;
  if (x2 === 0n) return sign === 0;
  return modPow(x2, (P - 1n) / 2n) === 1n;
}

function ed25519PublicKey(publicKey: unknown): KeyObject | null {
  if (typeof publicKey !== 'string') return null;
  const cached = publicKeyCache.get(publicKey);
  if (cached !== undefined) return cached;
  const raw = canonicalKey(publicKey);
  if (raw === null) return null;
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.concat([ED25519_SPKI, raw]), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
  makeRoom(publicKeyCache, PUBLIC_KEY_CACHE_MAX);
  publicKeyCache.set(publicKey, key);
  return key;
}

/** Verifies an Ed25519 signature (base64) by `publicKey` (base64) over the UTF-8 bytes of `text`. */
export function verifySignature(publicKey: string, text: string, signature: unknown): boolean {
  const key = ed25519PublicKey(publicKey);
  const sig = fromBase64Exact(signature, SIGNATURE_BYTES);
  if (key === null || sig === null) return false;
  try {
    return cryptoVerify(null, Buffer.from(text, 'utf8'), key, sig);
  } catch {
    return false;
  }
}

export interface EncKeyPair {
  /** base64 raw X25519 public key */
  readonly publicKey: string;
  /** base64 raw X25519 private key; never log or echo it */
  readonly privateKey: string;
}

export function generateEncKeyPair(): EncKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return {
    publicKey: toBase64(rawPublic(publicKey)),
    privateKey: toBase64(privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-KEY_BYTES)),
  };
}

/** The X25519 public key of a raw private key (base64 in, base64 out); null if malformed. */
export function encPublicFromPrivate(privateKey: string): string | null {
  const raw = fromBase64Exact(privateKey, KEY_BYTES);
  if (raw === null) return null;
  const key = createPrivateKey({ key: Buffer.concat([X25519_PKCS8, raw]), format: 'der', type: 'pkcs8' });
  return toBase64(rawPublic(createPublicKey(key)));
}

/** X25519 shared secret of raw private and public keys; null when either is malformed. */
export function x25519SharedSecret(privateKey: Uint8Array, publicKey: Uint8Array): Buffer | null {
  if (privateKey.length !== KEY_BYTES || publicKey.length !== KEY_BYTES) return null;
  try {
    return diffieHellman({
      privateKey: createPrivateKey({ key: Buffer.concat([X25519_PKCS8, privateKey]), format: 'der', type: 'pkcs8' }),
      publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, publicKey]), format: 'der', type: 'spki' }),
    });
  } catch {
    return null;
  }
}

export function isEncPublicKey(publicKey: unknown): publicKey is string {
  return fromBase64Exact(publicKey, KEY_BYTES) !== null;
}
