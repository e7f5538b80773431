// Pairing by one-time token (protocol §5): a 60-bit Crockford token, its scrypt key (the only thing
// the inviting host keeps), and HMAC-SHA256 over the canonical transcript of both parties.
import { createHmac, hkdfSync, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { fromBase64Url, toBase64Url } from './base64.ts';
import { canonicalJson } from './canonical.ts';
import { isPublicKey } from './keys.ts';
import { RELAY_HOST_RE } from './names.ts';
import { isPlainObject } from './records/validate.ts';

export const PAIR_PROTO = 'agentmbx-pair-token-v1';
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TOKEN_CHARS = 12;
/** scrypt cost of §5: N=2^15, r=8, p=1 (needs 32 MiB; maxmem leaves room). */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const NONCE_BYTES = 16;
export const MAX_PAIR_ADDR_CHARS = 300;

export type PairLabel = 'join' | 'accept';

/** One side of the pairing: what hello returns about A, and what B posts about itself. */
export interface PairParty {
  host: string;
  host_pubkey: string;
  owner_pubkey: string;
  nonce: string;
}

/** A fresh token `XXXX-XXXX-XXXX` (12 Crockford characters, 60 random bits). */
export function newPairToken(random: (n: number) => Uint8Array = randomBytes): string {
  const bytes = random(8);
  let value = 0n;
  for (const b of bytes) value = (value << 8n) | BigInt(b);
  let chars = '';
  for (let i = 0; i < TOKEN_CHARS; i++) {
    chars = CROCKFORD.charAt(Number(value & 31n)) + chars;
    value >>= 5n;
  }
  return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8)}`;
}

/**
 * The canonical form of typed token input (any case, dashes or spaces optional, Crockford's
 * I/L → 1 and O → 0); null when it is not 12 Crockford characters.
 */
export function normalizePairToken(input: string): string | null {
  const chars = input.toUpperCase().replace(/[\s-]/g, '').replace(/[IL]/g, '1').replace(/O/g, '0');
  if (chars.length !== TOKEN_CHARS || [...chars].some((c) => !CROCKFORD.includes(c))) return null;
  return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8)}`;
}

/** scrypt(token, salt "agentmbx-pair-token-v1") — the token key both sides derive. */
export function pairTokenKey(token: string): Buffer {
  return scryptSync(token, PAIR_PROTO, 32, SCRYPT);
}

export function newPairNonce(random: (n: number) => Uint8Array = randomBytes): string {
  return toBase64Url(random(NONCE_BYTES));
}

export function isPairNonce(x: unknown): x is string {
  return fromBase64Url(x)?.length === NONCE_BYTES;
}

/** A party record with exactly the four fields, a valid host name, keys and nonce; null otherwise. */
export function checkPairParty(x: unknown): PairParty | null {
  if (!isPlainObject(x)) return null;
  if (typeof x.host !== 'string' || !RELAY_HOST_RE.test(x.host)) return null;
  if (!isPublicKey(x.host_pubkey) || !isPublicKey(x.owner_pubkey) || !isPairNonce(x.nonce)) return null;
  return { host: x.host, host_pubkey: x.host_pubkey, owner_pubkey: x.owner_pubkey, nonce: x.nonce };
}

/** canonical {proto, a: A's party, b: B's party + addr}. */
export function pairTranscript(a: PairParty, b: PairParty, bAddr: string): string {
  const aParty = { host: a.host, host_pubkey: a.host_pubkey, owner_pubkey: a.owner_pubkey, nonce: a.nonce };
  const bParty = { host: b.host, host_pubkey: b.host_pubkey, owner_pubkey: b.owner_pubkey, nonce: b.nonce, addr: bAddr };
  return canonicalJson({ proto: PAIR_PROTO, a: aParty, b: bParty });
}

/** base64url HMAC-SHA256 keyed by HKDF(token key, salt, "mac:<label>") over "<label>\n" + transcript. */
export function pairMac(tokenKey: Uint8Array, label: PairLabel, transcript: string): string {
  const macKey = Buffer.from(hkdfSync('sha256', tokenKey, PAIR_PROTO, `mac:${label}`, 32));
  return toBase64Url(createHmac('sha256', macKey).update(`${label}\n${transcript}`, 'utf8').digest());
}

/** Constant-time check of a MAC. */
export function verifyPairMac(tokenKey: Uint8Array, label: PairLabel, transcript: string, mac: unknown): boolean {
  const given = fromBase64Url(mac);
  const expected = fromBase64Url(pairMac(tokenKey, label, transcript));
  return given !== null && expected !== null && given.length === expected.length && timingSafeEqual(given, expected);
}
