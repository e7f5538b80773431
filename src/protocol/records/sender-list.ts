// A target's sender allowlist (protocol §3.6, §7.16), signed by the target host.
import { isPublicKey, type SigningKey } from '../keys.ts';
import { hasExactKeys, isPlainObject, parseIsoMs, signCanonical, verifyCanonical } from '../validate.ts';

/** Sender keys one list may hold. */
export const MAX_SENDERS = 1024;
/** How far ahead of the checker's clock a list's `iat` may be: a future-dated list must not freeze the allowlist. */
export const SENDER_LIST_MAX_FUTURE_MS = 5 * 60 * 1000;

export type SenderListRecord = { v: 1; type: 'relay-senders'; host_pubkey: string; senders: string[]; iat: string };

export type SenderListProblem = 'malformed' | 'bad sender key' | 'too many senders' | 'iat in the future' | 'bad signature';
export type SenderListCheck = { ok: true; list: SenderListRecord; iatMs: number } | { ok: false; problem: SenderListProblem };

const KEYS = ['v', 'type', 'host_pubkey', 'senders', 'iat'] as const;

export function signSenderList(list: SenderListRecord, key: SigningKey): string {
  return signCanonical(list, key);
}

/**
 * Checks a list and its signature by the list's own `host_pubkey` (whether that is the caller is
 * the relay's check). One entry that is not a valid key refuses the whole list.
 */
export function checkSenderList(list: unknown, sig: unknown, nowMs: number): SenderListCheck {
  if (!isPlainObject(list) || !hasExactKeys(list, KEYS)) return { ok: false, problem: 'malformed' };
  const iatMs = parseIsoMs(list.iat);
  if (list.v !== 1 || list.type !== 'relay-senders' || !isPublicKey(list.host_pubkey) || !Array.isArray(list.senders) || iatMs === null) {
    return { ok: false, problem: 'malformed' };
  }
  // Count before checking each key, so an oversized list costs no key parsing.
  if (list.senders.length > MAX_SENDERS) return { ok: false, problem: 'too many senders' };
  if (!list.senders.every(isPublicKey)) return { ok: false, problem: 'bad sender key' };
  if (iatMs > nowMs + SENDER_LIST_MAX_FUTURE_MS) return { ok: false, problem: 'iat in the future' };
  if (!verifyCanonical(list.host_pubkey, list, sig)) return { ok: false, problem: 'bad signature' };
  return { ok: true, list: list as SenderListRecord, iatMs };
}
