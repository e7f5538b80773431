// Fingerprints (protocol.md §1): first 16 hex digits of SHA-256 over the raw public key, as
// four groups of four joined by '-'.
import { createHash } from 'node:crypto';
import { fromBase64Exact } from './base64.ts';
import { KEY_BYTES } from './keys.ts';

export function fingerprint(publicKey: string): string {
  const raw = fromBase64Exact(publicKey, KEY_BYTES);
  if (raw === null) throw new TypeError('not a 32-byte base64 public key');
  const hex = createHash('sha256').update(raw).digest('hex').slice(0, 16);
  return `${hex.slice(0, 4)}-${hex.slice(4, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}`;
}

/**
 * The forgiving fingerprint input: any case, with or without dashes, or the whole base64 key.
 * Returns the canonical dashed form, or null when the text is none of those.
 */
export function parseFingerprintInput(text: string): string | null {
  const trimmed = text.trim();
  if (fromBase64Exact(trimmed, KEY_BYTES) !== null) return fingerprint(trimmed);
  const hex = trimmed.replaceAll('-', '').toLowerCase();
  if (!/^[0-9a-f]{16}$/.test(hex)) return null;
  return `${hex.slice(0, 4)}-${hex.slice(4, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}`;
}

/** Whether typed fingerprint input names this public key. */
export function fingerprintMatches(input: string, publicKey: string): boolean {
  const wanted = parseFingerprintInput(input);
  return wanted !== null && wanted === fingerprint(publicKey);
}
