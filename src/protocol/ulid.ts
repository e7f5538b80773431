// ULIDs (protocol §1): 26 Crockford base32 characters, 48-bit millisecond time then 80 random bits,
// monotonic inside one millisecond (the random part of the previous id plus one).
import { createHash, randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_CHARS = 10;
const RANDOM_BYTES = 10;
const MAX_TIME_MS = 2 ** 48 - 1;

/** The first character holds only 3 bits of the 48-bit time, so it is 0–7. */
const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

let lastMs = -1;
let lastRandom: Uint8Array = new Uint8Array(RANDOM_BYTES);

export function isUlid(value: unknown): value is string {
  return typeof value === 'string' && ULID_RE.test(value);
}

/**
 * A new ULID for time `nowMs`. Within one millisecond, and when the clock steps back, ids stay
 * strictly increasing: the previous time is kept and its random part is incremented.
 */
export function newUlid(nowMs: number, random: (n: number) => Uint8Array = randomBytes): string {
  if (!Number.isSafeInteger(nowMs) || nowMs < 0 || nowMs > MAX_TIME_MS) throw new RangeError('ULID time out of range');
  let ms = nowMs;
  let rand: Uint8Array;
  if (ms <= lastMs) {
    ms = lastMs;
    rand = increment(lastRandom);
    // 80 bits wrapped to zero: move one millisecond on rather than repeat or fail.
    if (rand.every((b) => b === 0)) ms += 1;
  } else {
    rand = Uint8Array.from(random(RANDOM_BYTES));
    if (rand.length !== RANDOM_BYTES) throw new RangeError('ULID randomness must be 10 bytes');
  }
  lastMs = ms;
  lastRandom = rand;
  return encodeTime(ms) + encodeRandom(rand);
}

/**
 * A ULID fixed by its inputs: time `ms` and the first 80 bits of SHA-256 over `seed`, outside the
 * monotonic sequence (for ids that must come out the same however often they are made).
 */
export function derivedUlid(ms: number, seed: string): string {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_TIME_MS) throw new RangeError('ULID time out of range');
  return encodeTime(ms) + encodeRandom(createHash('sha256').update(seed, 'utf8').digest().subarray(0, RANDOM_BYTES));
}

/** The time of a ULID in milliseconds; null when the text is not a ULID. */
export function ulidTimeMs(value: unknown): number | null {
  if (!isUlid(value)) return null;
  let ms = 0;
  for (const ch of value.slice(0, TIME_CHARS)) ms = ms * 32 + CROCKFORD.indexOf(ch);
  return ms;
}

function encodeTime(ms: number): string {
  let out = '';
  let rest = ms;
  for (let i = 0; i < TIME_CHARS; i++) {
    out = CROCKFORD.charAt(rest % 32) + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  let value = 0n;
  for (const b of bytes) value = (value << 8n) | BigInt(b);
  let out = '';
  for (let i = 0; i < 16; i++) {
    out = CROCKFORD.charAt(Number(value & 31n)) + out;
    value >>= 5n;
  }
  return out;
}

function increment(bytes: Uint8Array): Uint8Array {
  const next = Uint8Array.from(bytes);
  for (let i = next.length - 1; i >= 0; i--) {
    const b = next[i] ?? 0;
    if (b < 255) {
      next[i] = b + 1;
      return next;
    }
    next[i] = 0;
  }
  return next;
}
