// Encryption-key advertisements (protocol §3.8): v2 ads bound to the host key with a lifetime, and
// the legacy v1 form {v:1, host, enc_pub}.
import { canonicalJson } from '../canonical.ts';
import { isEncPublicKey, isPublicKey, verifySignature, type SigningKey } from '../keys.ts';
import { RELAY_HOST_RE } from '../names.ts';
import { hasExactKeys, isPlainObject, parseIsoMs, signCanonical, verifyCanonical } from '../validate.ts';

/** Longest `exp − iat` a checker accepts. */
export const ENC_AD_MAX_LIFETIME_MS = 90 * 24 * 60 * 60 * 1000;
/** The life hosts give the ads they publish (refreshed daily). */
export const ENC_AD_PUBLISH_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000;
/** How far ahead of the checker's clock `iat` may be. */
export const ENC_AD_MAX_FUTURE_MS = 5 * 60 * 1000;

export type EncAdV2 = { v: 2; type: 'enc-ad'; host: string; host_pubkey: string; enc_pub: string; iat: string; exp: string };

export type EncAdProblem = 'malformed' | "not the caller's own ad" | 'iat is in the future' | 'expired' | 'lifetime over 90 days' | 'bad signature';
export type EncAdCheck = { ok: true; ad: EncAdV2; iatMs: number; expMs: number } | { ok: false; reason: EncAdProblem };

const KEYS = ['v', 'type', 'host', 'host_pubkey', 'enc_pub', 'iat', 'exp'] as const;

export function signEncAdV2(ad: EncAdV2, key: SigningKey): string {
  return signCanonical(ad, key);
}

/**
 * Checks a v2 ad at `nowMs`, signed by its own `host_pubkey`; with `callerPubkey`, also that the
 * ad is the caller's own. An `exp` not after `iat` is malformed.
 */
export function checkEncAdV2(ad: unknown, sig: unknown, nowMs: number, callerPubkey?: string): EncAdCheck {
  if (!isPlainObject(ad) || !hasExactKeys(ad, KEYS)) return { ok: false, reason: 'malformed' };
  const iatMs = parseIsoMs(ad.iat);
  const expMs = parseIsoMs(ad.exp);
  if (
    ad.v !== 2 ||
    ad.type !== 'enc-ad' ||
    typeof ad.host !== 'string' ||
    !RELAY_HOST_RE.test(ad.host) ||
    !isPublicKey(ad.host_pubkey) ||
    !isEncPublicKey(ad.enc_pub) ||
    iatMs === null ||
    expMs === null ||
    expMs <= iatMs
  ) {
    return { ok: false, reason: 'malformed' };
  }
  if (callerPubkey !== undefined && ad.host_pubkey !== callerPubkey) return { ok: false, reason: "not the caller's own ad" };
  if (iatMs > nowMs + ENC_AD_MAX_FUTURE_MS) return { ok: false, reason: 'iat is in the future' };
  if (expMs <= nowMs) return { ok: false, reason: 'expired' };
  if (expMs - iatMs > ENC_AD_MAX_LIFETIME_MS) return { ok: false, reason: 'lifetime over 90 days' };
  if (!verifyCanonical(ad.host_pubkey, ad, sig)) return { ok: false, reason: 'bad signature' };
  return { ok: true, ad: ad as EncAdV2, iatMs, expMs };
}

/** The legacy v1 signed string: canonical {v:1, host, enc_pub}. */
export function encAdV1String(host: string, encPub: string): string {
  return canonicalJson({ v: 1, host, enc_pub: encPub });
}

export function signEncAdV1(host: string, encPub: string, key: SigningKey): string {
  return key.sign(encAdV1String(host, encPub));
}

export function verifyEncAdV1(host: unknown, encPub: unknown, sig: unknown, hostPubkey: string): boolean {
  if (typeof host !== 'string' || !isEncPublicKey(encPub)) return false;
  return verifySignature(hostPubkey, encAdV1String(host, encPub), sig);
}
