// Pairing by one-time token (protocol §5): a 60-bit Crockford token, its scrypt key (the only thing
// the inviting host keeps), and HMAC-SHA256 over the canonical transcript of both parties.
import { createHmac, hkdfSync, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { fromBase64Url, toBase64Url } from './base64.ts';
import { canonicalJson } from './canonical.ts';
import { isPublicKey } from './keys.ts';
import { RELAY_HOST_RE } from './names.ts';
import { isPlainObject } from './validate.ts';

export const PAIR_PROTO = 'agentmbx-pair-token-v1';
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TOKEN_CHARS = 12;
/** scrypt cost of §5: N=2^15, r=8, p=1 (needs 32 MiB; maxmem leaves room). */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const NONCE_BYTES = 16;
export const MAX_PAIR_ADDR_CHARS = 300;
/** Longest MAC text read (a base64url HMAC-SHA256 is 43 characters). */
const MAX_PAIR_MAC_CHARS = 128;

export type PairLabel = 'join' | 'accept';

/**
 * One side of the pairing: what hello returns about A, and what B posts about itself.
 * `owner_pubkey` is null for a host without an owner key (ours have none; AgentMBX hosts until
 * their owner runs `owner init`): never the host key in its place.
 */
export interface PairParty {
  host: string;
  host_pubkey: string;
  owner_pubkey: string | null;
  nonce: string;
}

/** B's POST /v1/pair/join, as read by A: B's party, the address B asks A to use, A's hello nonce, the MAC. */
export interface PairJoinRequest {
  party: PairParty;
  addr: string;
  nonce_a: string;
  mac: string;
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

/**
 * The token key both sides derive: scrypt over the 12 normalised token characters WITHOUT dashes
 * (salt "agentmbx-pair-token-v1"). Takes the shown form (`XXXX-XXXX-XXXX`) or the bare 12.
 */
export function pairTokenKey(token: string): Buffer {
  return scryptSync(token.replace(/-/g, ''), PAIR_PROTO, 32, SCRYPT);
}

export function newPairNonce(random: (n: number) => Uint8Array = randomBytes): string {
  return toBase64Url(random(NONCE_BYTES));
}

export function isPairNonce(x: unknown): x is string {
  return fromBase64Url(x)?.length === NONCE_BYTES;
}

/** The four party fields (a valid host name, host key, owner key or null, nonce) of a record; null otherwise. Extra members are ignored. */
export function checkPairParty(x: unknown): PairParty | null {
  if (!isPlainObject(x)) return null;
  if (typeof x.host !== 'string' || !RELAY_HOST_RE.test(x.host)) return null;
  if (!isPublicKey(x.host_pubkey) || !isPairNonce(x.nonce)) return null;
  if (x.owner_pubkey !== null && !isPublicKey(x.owner_pubkey)) return null;
  return { host: x.host, host_pubkey: x.host_pubkey, owner_pubkey: x.owner_pubkey, nonce: x.nonce };
}

/** A join body `{v:1, host, host_pubkey, owner_pubkey, nonce, addr, nonce_a, mac}` (extra members ignored); null when malformed. */
export function checkPairJoin(x: unknown): PairJoinRequest | null {
  const party = checkPairParty(x);
  if (party === null || !isPlainObject(x) || x.v !== 1) return null;
  const { addr, nonce_a: nonceA, mac } = x;
  if (typeof addr !== 'string' || addr.length === 0 || addr.length > MAX_PAIR_ADDR_CHARS) return null;
  if (!isPairNonce(nonceA) || typeof mac !== 'string' || mac.length > MAX_PAIR_MAC_CHARS) return null;
  return { party, addr, nonce_a: nonceA, mac };
}

/** canonical {proto, a: A's party, b: B's party + addr}; `owner_pubkey` as sent, null included. */
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
