// Strict base64 (protocol.md §7.17): standard alphabet with padding, and canonical, so that one
// byte string has exactly one spelling. Nonces and MACs use base64url without padding.

const URL_SAFE = /^[A-Za-z0-9_-]*$/;

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/**
 * Decodes strict canonical base64; null when the text is not exactly that. Node's decoder skips what
 * it does not know, but the encoder writes only the canonical spelling, so the round trip below
 * accepts exactly that (a pattern test first cost a push more than the decoding).
 */
export function fromBase64(text: unknown): Buffer | null {
  if (typeof text !== 'string') return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

/** Decodes strict base64 that must hold exactly `length` bytes (a key, a signature). */
export function fromBase64Exact(text: unknown, length: number): Buffer | null {
  const bytes = fromBase64(text);
  return bytes !== null && bytes.length === length ? bytes : null;
}

export function toBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

export function fromBase64Url(text: unknown): Buffer | null {
  if (typeof text !== 'string' || !URL_SAFE.test(text) || text.length % 4 === 1) return null;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}
