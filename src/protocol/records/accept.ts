// The relay's accept receipt (protocol §3.3): its signed statement that it durably committed an
// item for each target. The sender drops an outbox row only on a valid one.
import { isPublicKey, type SigningKey } from '../keys.ts';
import { hasExactKeys, isIsoTime, isPlainObject, isPositiveSafeInteger, isSha256Hex, isStringOfLength, verifyCanonical } from '../validate.ts';

export type AcceptTarget = { host_pubkey: string; seq: number; wire_hash: string };

export type RelayAccept = {
  v: 1;
  type: 'relay-accept';
  relay_pubkey: string;
  epoch: string;
  sender_pubkey: string;
  item_id: string;
  targets: AcceptTarget[];
  at: string;
};

/** Item ids are 1–300 characters (§3.3 `bad item id`). */
export const MAX_ITEM_ID_CHARS = 300;
/** Epochs are random ids; anything longer is not one a relay made. */
export const MAX_EPOCH_CHARS = 128;
/** Targets one accept may list: well above any relay's max_targets (64 by default), so a verifier's work stays bounded. */
export const MAX_ACCEPT_TARGETS = 1024;

const KEYS = ['v', 'type', 'relay_pubkey', 'epoch', 'sender_pubkey', 'item_id', 'targets', 'at'] as const;

/** The relay signs one accept per accepted item: its canonical text is built without the general canonicalizer. */
export function signAccept(accept: RelayAccept, relayKey: SigningKey): string {
  return relayKey.sign(acceptCanonicalText(accept));
}

/**
 * RFC 8785 text of an accept. JCS writes strings and numbers as JSON.stringify does, so for an
 * object whose members are inserted in sorted key order and hold only strings and safe integers,
 * JSON.stringify's text is the canonical one (a test checks it against canonicalJson); this costs
 * a fraction of the general canonicalizer's sort-and-recurse.
 */
export function acceptCanonicalText(accept: RelayAccept): string {
  const targets = accept.targets.map((t) => {
    if (!Number.isSafeInteger(t.seq)) throw new RangeError('an accept seq must be a safe integer');
    return { host_pubkey: t.host_pubkey, seq: t.seq, wire_hash: t.wire_hash };
  });
  return JSON.stringify({
    at: accept.at,
    epoch: accept.epoch,
    item_id: accept.item_id,
    relay_pubkey: accept.relay_pubkey,
    sender_pubkey: accept.sender_pubkey,
    targets,
    type: accept.type,
    v: accept.v,
  });
}

/** The accept when it is well formed, names `relayPubkey` and carries that key's signature; null otherwise. */
export function verifyAccept(accept: unknown, sig: unknown, relayPubkey: string): RelayAccept | null {
  if (!isAcceptShape(accept) || accept.relay_pubkey !== relayPubkey) return null;
  return verifyCanonical(relayPubkey, accept, sig) ? accept : null;
}

/**
 * The accept's entry for one outbox row: the accept is for `itemId` and lists `hostPubkey` with
 * exactly `wireHash`. Null otherwise: the row then stays pending (design §3, sender side).
 */
export function acceptedTarget(accept: RelayAccept, itemId: string, hostPubkey: string, wireHash: string): AcceptTarget | null {
  if (accept.item_id !== itemId) return null;
  return accept.targets.find((t) => t.host_pubkey === hostPubkey && t.wire_hash === wireHash) ?? null;
}

function isAcceptShape(x: unknown): x is RelayAccept {
  if (!isPlainObject(x) || !hasExactKeys(x, KEYS)) return false;
  return (
    x.v === 1 &&
    x.type === 'relay-accept' &&
    isPublicKey(x.relay_pubkey) &&
    isStringOfLength(x.epoch, 1, MAX_EPOCH_CHARS) &&
    isPublicKey(x.sender_pubkey) &&
    isStringOfLength(x.item_id, 1, MAX_ITEM_ID_CHARS) &&
    Array.isArray(x.targets) &&
    x.targets.length >= 1 &&
    x.targets.length <= MAX_ACCEPT_TARGETS &&
    x.targets.every(isAcceptTarget) &&
    isIsoTime(x.at)
  );
}

function isAcceptTarget(t: unknown): boolean {
  return (
    isPlainObject(t) &&
    hasExactKeys(t, ['host_pubkey', 'seq', 'wire_hash']) &&
    isPublicKey(t.host_pubkey) &&
    isPositiveSafeInteger(t.seq) &&
    isSha256Hex(t.wire_hash)
  );
}
