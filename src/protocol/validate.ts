// Small shape checks shared by every protocol record. Records are parsed from untrusted JSON, so
// each check takes `unknown` and narrows it; nothing here throws.
import { canonicalJson } from './canonical.ts';
import { verifySignature, type SigningKey } from './keys.ts';

/** Exactly the form `new Date(ms).toISOString()` writes for years 0000–9999: `2026-12-02T11:30:49.123Z`. */
const ISO_UTC_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Strict ISO-8601 UTC time as `toISOString()` writes it (a real calendar date, milliseconds, `Z`). */
export function isIsoTime(value: unknown): value is string {
  return parseIsoMs(value) !== null;
}

/** Milliseconds of a strict ISO-8601 UTC time (see isIsoTime); null for anything else. */
export function parseIsoMs(value: unknown): number | null {
  if (typeof value !== 'string' || !ISO_UTC_RE.test(value)) return null;
  const ms = Date.parse(value);
  // Round-tripping refuses dates that Date.parse silently rolls over (2026-02-30) or rejects.
  return Number.isFinite(ms) && new Date(ms).toISOString() === value ? ms : null;
}

/** A non-null, non-array object made by JSON.parse or an object literal. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Whether `obj` holds every key of `required`, and no keys beyond `required` and `optional`.
 * Records are signed over all their members, so unknown members are refused rather than carried.
 */
export function hasExactKeys(obj: Record<string, unknown>, required: readonly string[], optional: readonly string[] = []): boolean {
  for (const key of required) if (!Object.hasOwn(obj, key)) return false;
  for (const key of Object.keys(obj)) if (!required.includes(key) && !optional.includes(key)) return false;
  return true;
}

/** A string of `min`…`max` UTF-16 code units (the protocol's "characters"). */
export function isStringOfLength(value: unknown, min: number, max: number): value is string {
  return typeof value === 'string' && value.length >= min && value.length <= max;
}

/** A positive safe integer (a relay seq, a receipt seq). */
export function isPositiveSafeInteger(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

/** C0 and C1 control characters, DEL included. */
export function hasControlCharacters(text: string): boolean {
  return /[\u0000-\u001f\u007f-\u009f]/.test(text);
}

/** Lowercase hex SHA-256, as a `wire_hash` is written. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * JSON value of wire bytes or text; undefined when the bytes are not strict UTF-8 JSON (protocol
 * §7.17). A byte-order mark is kept, so it makes the text invalid rather than being skipped.
 */
export function parseJsonWire(wire: string | Uint8Array): unknown {
  try {
    return JSON.parse(typeof wire === 'string' ? wire : STRICT_UTF8.decode(wire)) as unknown;
  } catch {
    return undefined;
  }
}

/** Signature by `key` over the canonical JSON of `record` (protocol §1). */
export function signCanonical(record: object, key: SigningKey): string {
  return key.sign(canonicalJson(record));
}

/** Whether `sig` is `publicKey`'s signature over canonical(record); false also when the record cannot be canonicalized. */
export function verifyCanonical(publicKey: string, record: object, sig: unknown): boolean {
  let text: string;
  try {
    text = canonicalJson(record);
  } catch {
    return false;
  }
  return verifySignature(publicKey, text, sig);
}
