// The relay's expiry notice (protocol §3.9): queued for the sender when an envelope item expires
// unpulled. Wire = canonical {notice, sig}, signed by the relay key.
import { canonicalJson } from '../canonical.ts';
import { isPublicKey, type SigningKey } from '../keys.ts';
import { MAX_ITEM_ID_CHARS } from './accept.ts';
import { hasExactKeys, isIsoTime, isPlainObject, isStringOfLength, parseJsonWire, signCanonical, verifyCanonical } from '../validate.ts';

export type RelayExpiredNotice = {
  v: 1;
  type: 'relay-expired';
  item_id: string;
  target_pubkey: string;
  accepted_at: string;
  expired_at: string;
};

const KEYS = ['v', 'type', 'item_id', 'target_pubkey', 'accepted_at', 'expired_at'] as const;

/** The notice's own item id: `expired:<item_id>:<target_pubkey>`. */
export function expiredItemId(itemId: string, targetPubkey: string): string {
  return `expired:${itemId}:${targetPubkey}`;
}

/** The notice's wire text: canonical {notice, sig}. */
export function signExpiredNotice(notice: RelayExpiredNotice, relayKey: SigningKey): string {
  return canonicalJson({ notice, sig: signCanonical(notice, relayKey) });
}

/** The notice in `wire` when it is well formed and signed by `relayPubkey`; null otherwise. */
export function verifyExpiredNotice(wire: string | Uint8Array, relayPubkey: string): RelayExpiredNotice | null {
  const parsed = parseJsonWire(wire);
  if (!isPlainObject(parsed) || !hasExactKeys(parsed, ['notice', 'sig'])) return null;
  const notice = parsed.notice;
  if (!isNoticeShape(notice)) return null;
  return verifyCanonical(relayPubkey, notice, parsed.sig) ? notice : null;
}

function isNoticeShape(x: unknown): x is RelayExpiredNotice {
  return (
    isPlainObject(x) &&
    hasExactKeys(x, KEYS) &&
    x.v === 1 &&
    x.type === 'relay-expired' &&
    isStringOfLength(x.item_id, 1, MAX_ITEM_ID_CHARS) &&
    isPublicKey(x.target_pubkey) &&
    isIsoTime(x.accepted_at) &&
    isIsoTime(x.expired_at)
  );
}
