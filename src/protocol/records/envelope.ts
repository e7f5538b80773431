// Envelope v3 (protocol §4.1): shape limits, the signing string, signing and verification, and
// the address forms an envelope may carry.
import { fromBase64 } from '../base64.ts';
import { canonicalJson } from '../canonical.ts';
import { fingerprint } from '../fingerprint.ts';
import { KEY_BYTES, SIGNATURE_BYTES, verifySignature, type SigningKey } from '../keys.ts';
import { NAME_RE, RELAY_HOST_RE } from '../names.ts';
import { isUlid } from '../ulid.ts';
import { metaProblem, type EnvelopeMeta } from './envelope-meta.ts';
import { hasControlCharacters, isIsoTime, isPlainObject, isStringOfLength } from '../validate.ts';

export const ENVELOPE_KINDS = ['message', 'request', 'reply', 'status', 'decision', 'alert', 'task'] as const;
export type EnvelopeKind = (typeof ENVELOPE_KINDS)[number];

/** Plain body: at most 256 KiB of UTF-8 text. */
export const MAX_BODY_BYTES = 256 * 1024;
/** Ciphertext of the largest plain body: the body plus the 16-byte Poly1305 tag. */
export const MAX_SEALED_BODY_BYTES = MAX_BODY_BYTES + 16;
/** base64 length of MAX_SEALED_BODY_BYTES (padded). */
export const MAX_SEALED_BODY_CHARS = 4 * Math.ceil(MAX_SEALED_BODY_BYTES / 3);
/** Counted in Unicode code points (codePoints below), not UTF-16 units. */
export const MAX_SUBJECT_CHARS = 200;
export const MAX_TO_ADDRESSES = 100;
/** Each address, `thread` and `reply_to`. */
export const MAX_ADDRESS_CHARS = 300;
export const MAX_REFS = 100;
export const MAX_REF_CHARS = 2048;

export const ENC_ALG = 'x25519+xchacha20poly1305';
export const ENC_NONCE_BYTES = 24;
export const ENC_TAG_BYTES = 16;

export type EnvelopeEnc = { v: 1; alg: typeof ENC_ALG; epk: string; nonce: string; body: string };
export type EnvelopeSig = { alg: 'ed25519'; host: string; key: string; value: string };

export type EnvelopeV3 = {
  v: 3;
  id: string;
  ts: string;
  from: string;
  to: string[];
  thread: string;
  reply_to: string | null;
  kind: EnvelopeKind;
  subject: string;
  body: string;
  needs_reply: boolean;
  refs: string[];
  meta: EnvelopeMeta;
  authority: Record<string, unknown> | null;
  enc: EnvelopeEnc | null;
  sig: EnvelopeSig;
};

export type UnsignedEnvelopeV3 = Omit<EnvelopeV3, 'sig'>;

export type Address = { kind: 'agent'; name: string; host?: string } | { kind: 'role'; role: string } | { kind: 'all' } | { kind: 'owner' };

/** `name@host`, bare `name`, `role:<role>`, `*` or `owner`; null for anything else. */
export function parseAddress(address: unknown): Address | null {
  if (!isStringOfLength(address, 1, MAX_ADDRESS_CHARS)) return null;
  if (address === '*') return { kind: 'all' };
  if (address === 'owner') return { kind: 'owner' };
  if (address.startsWith('role:')) {
    const role = address.slice('role:'.length);
    return NAME_RE.test(role) ? { kind: 'role', role } : null;
  }
  const at = address.indexOf('@');
  if (at === -1) return NAME_RE.test(address) ? { kind: 'agent', name: address } : null;
  const name = address.slice(0, at);
  const host = address.slice(at + 1);
  return NAME_RE.test(name) && NAME_RE.test(host) ? { kind: 'agent', name, host } : null;
}

/** The name and host of a fully qualified `name@host` (the form of `from`); null for any other form. */
export function splitQualifiedAddress(address: unknown): { name: string; host: string } | null {
  const parsed = parseAddress(address);
  return parsed?.kind === 'agent' && parsed.host !== undefined ? { name: parsed.name, host: parsed.host } : null;
}

/** A fully qualified `name@host` (the form of `from`). */
export function isQualifiedAddress(address: unknown): address is string {
  return splitQualifiedAddress(address) !== null;
}

export type EnvelopeShape = { ok: true; envelope: EnvelopeV3 } | { ok: false; reason: string };

/**
 * Checks every field and limit of a v3 envelope (not its signature). The reason is short, for
 * `rejected:bad envelope: <reason>`. Members beyond §4.1's list are tolerated: the signature
 * covers them, and newer senders may add some.
 */
export function checkEnvelopeShape(x: unknown): EnvelopeShape {
  const reason = envelopeProblem(x);
  return reason === null ? { ok: true, envelope: x as EnvelopeV3 } : { ok: false, reason };
}

function envelopeProblem(x: unknown): string | null {
  if (!isPlainObject(x)) return 'not an object';
  if (x.v !== 3) return 'not version 3';
  if (!isUlid(x.id)) return 'bad id';
  if (!isIsoTime(x.ts)) return 'bad ts';
  if (!isQualifiedAddress(x.from)) return 'bad from';
  if (!Array.isArray(x.to) || x.to.length === 0) return 'bad to';
  if (x.to.length > MAX_TO_ADDRESSES) return 'too many to addresses';
  for (const address of x.to) {
    if (typeof address === 'string' && address.length > MAX_ADDRESS_CHARS) return 'address too long';
    if (parseAddress(address) === null) return 'bad to address';
  }
  if (typeof x.thread !== 'string') return 'bad thread';
  if (x.thread.length > MAX_ADDRESS_CHARS) return 'thread too long';
  if (x.reply_to !== null && typeof x.reply_to !== 'string') return 'bad reply_to';
  if (typeof x.reply_to === 'string' && x.reply_to.length > MAX_ADDRESS_CHARS) return 'reply_to too long';
  if (typeof x.kind !== 'string' || !(ENVELOPE_KINDS as readonly string[]).includes(x.kind)) return 'bad kind';
  if (typeof x.subject !== 'string') return 'bad subject';
  if (codePoints(x.subject) > MAX_SUBJECT_CHARS) return 'subject too long';
  if (hasControlCharacters(x.subject)) return 'control characters in subject';
  if (typeof x.body !== 'string') return 'bad body';
  if (typeof x.needs_reply !== 'boolean') return 'bad needs_reply';
  if (!Array.isArray(x.refs)) return 'bad refs';
  if (x.refs.length > MAX_REFS) return 'too many refs';
  for (const ref of x.refs) {
    if (typeof ref !== 'string') return 'bad refs';
    if (ref.length > MAX_REF_CHARS) return 'ref too long';
  }
  const badMeta = metaProblem(x.meta);
  if (badMeta !== null) return badMeta;
  if (x.authority !== null && !isPlainObject(x.authority)) return 'bad authority';
  const bodyProblem = x.enc === null ? plainBodyProblem(x.body) : sealedBodyProblem(x.enc, x.body);
  if (bodyProblem !== null) return bodyProblem;
  const problem = sigProblem(x.sig);
  if (problem !== null) return problem;
  // authority and meta's unknown members are free-form: one that cannot be canonicalized could never be verified.
  try {
    envelopeSigningString(x as EnvelopeV3);
  } catch {
    return 'nested too deeply';
  }
  return null;
}

/** Characters as the subject limit counts them: Unicode code points (an emoji is one, not two UTF-16 units). */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

function plainBodyProblem(body: string): string | null {
  // a lone surrogate has no UTF-8 form: sealing would turn it into U+FFFD
  if (!body.isWellFormed()) return 'body is not Unicode text (a lone surrogate)';
  return Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES ? 'body too long' : null;
}

function sealedBodyProblem(enc: unknown, body: string): string | null {
  if (!isPlainObject(enc)) return 'bad enc';
  if (enc.v !== 1 || enc.alg !== ENC_ALG) return 'bad enc';
  if (fromBase64(enc.epk)?.length !== KEY_BYTES) return 'bad enc epk';
  if (fromBase64(enc.nonce)?.length !== ENC_NONCE_BYTES) return 'bad enc nonce';
  if (typeof enc.body !== 'string' || enc.body.length > MAX_SEALED_BODY_CHARS) return 'body too long';
  const ciphertext = fromBase64(enc.body);
  if (ciphertext === null || ciphertext.length < ENC_TAG_BYTES) return 'bad enc body';
  if (ciphertext.length > MAX_SEALED_BODY_BYTES) return 'body too long';
  if (body !== enc.body) return 'body is not enc.body';
  return null;
}

function sigProblem(sig: unknown): string | null {
  if (!isPlainObject(sig) || sig.alg !== 'ed25519') return 'bad sig';
  if (typeof sig.host !== 'string' || !RELAY_HOST_RE.test(sig.host)) return 'bad sig host';
  if (typeof sig.key !== 'string' || !/^[0-9a-f]{4}(?:-[0-9a-f]{4}){3}$/.test(sig.key)) return 'bad sig key';
  if (fromBase64(sig.value)?.length !== SIGNATURE_BYTES) return 'bad sig value';
  return null;
}

/** Canonical JSON of the envelope without `sig`: what the host key signs. Throws CanonicalJsonError on hostile values. */
export function envelopeSigningString(env: UnsignedEnvelopeV3 | EnvelopeV3): string {
  const { sig: _sig, ...unsigned } = env as EnvelopeV3;
  return canonicalJson(unsigned);
}

/** Signs an envelope (sealed first, when it is to be sealed: the signature covers the ciphertext). */
export function signEnvelope(unsigned: UnsignedEnvelopeV3, hostName: string, key: SigningKey): EnvelopeV3 {
  const value = key.sign(envelopeSigningString(unsigned));
  return { ...unsigned, sig: { alg: 'ed25519', host: hostName, key: fingerprint(key.publicKey), value } };
}

/** Whether `env.sig` is a signature by `hostPubkey` whose fingerprint `sig.key` names. */
export function verifyEnvelope(env: EnvelopeV3, hostPubkey: string): boolean {
  const sig: unknown = (env as { sig?: unknown } | null)?.sig;
  if (!isPlainObject(sig) || sig.alg !== 'ed25519') return false;
  let expected: string;
  let text: string;
  try {
    expected = fingerprint(hostPubkey);
    text = envelopeSigningString(env);
  } catch {
    return false;
  }
  return sig.key === expected && verifySignature(hostPubkey, text, sig.value);
}

/** Whether the body is sealed: `enc` present and the top-level body is its ciphertext. */
export function isSealed(env: Pick<EnvelopeV3, 'enc' | 'body'>): boolean {
  const enc: unknown = env.enc;
  return isPlainObject(enc) && typeof enc.body === 'string' && env.body === enc.body;
}
