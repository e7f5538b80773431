// Delivery receipts (T218, protocol §4.2): signed by the recipient host, carried over the LAN or
// as relay items with wire = canonical {rec, sig}.
import { canonicalJson } from '../canonical.ts';
import type { SigningKey } from '../keys.ts';
import { isQualifiedAddress } from './envelope.ts';
import {
  hasControlCharacters,
  hasExactKeys,
  isIsoTime,
  isPlainObject,
  isPositiveSafeInteger,
  isStringOfLength,
  parseJsonWire,
  signCanonical,
  verifyCanonical,
} from '../validate.ts';

export const RECEIPT_STATES = ['delivered', 'notified', 'read', 'acked'] as const;
export type ReceiptState = (typeof RECEIPT_STATES)[number];

export const RECEIPT_MSG_MIN_CHARS = 10;
export const RECEIPT_MSG_MAX_CHARS = 40;
export const RECEIPT_NOTE_MAX_CHARS = 500;
export const RECEIPT_DID_MAX_CHARS = 200;

export type DeliveryReceipt = {
  v: 1;
  type: 'receipt';
  msg: string;
  recipient: string;
  state: ReceiptState;
  at: string;
  note?: string;
  did?: string;
  seq: number;
};

export type SignedReceipt = { rec: DeliveryReceipt; sig: string };

const REQUIRED = ['v', 'type', 'msg', 'recipient', 'state', 'at', 'seq'] as const;
const OPTIONAL = ['note', 'did'] as const;

/** Rank of a state (delivered 0 < notified 1 < read 2 < acked 3); -1 for anything else. */
export function receiptRank(state: unknown): number {
  return RECEIPT_STATES.indexOf(state as ReceiptState);
}

/** The receipt when `x` is a well-formed record within every limit of §4.2; null otherwise. */
export function checkReceiptShape(x: unknown): DeliveryReceipt | null {
  if (!isPlainObject(x) || !hasExactKeys(x, REQUIRED, OPTIONAL)) return null;
  if (x.v !== 1 || x.type !== 'receipt') return null;
  if (!isStringOfLength(x.msg, RECEIPT_MSG_MIN_CHARS, RECEIPT_MSG_MAX_CHARS) || /\s/.test(x.msg) || hasControlCharacters(x.msg)) return null;
  // name@host; the name may be `owner` (the host owner's own mailbox)
  if (!isQualifiedAddress(x.recipient)) return null;
  if (receiptRank(x.state) < 0) return null;
  if (!isIsoTime(x.at)) return null;
  if (x.note !== undefined && !isStringOfLength(x.note, 0, RECEIPT_NOTE_MAX_CHARS)) return null;
  if (x.did !== undefined && (x.state !== 'acked' || !isStringOfLength(x.did, 0, RECEIPT_DID_MAX_CHARS))) return null;
  if (!isPositiveSafeInteger(x.seq)) return null;
  return x as DeliveryReceipt;
}

export function signReceipt(rec: DeliveryReceipt, key: SigningKey): SignedReceipt {
  return { rec, sig: signCanonical(rec, key) };
}

/** `{rec, sig}` with a well-formed rec and a string sig (the signature is not checked). */
export function parseSignedReceipt(x: unknown): SignedReceipt | null {
  if (!isPlainObject(x) || !hasExactKeys(x, ['rec', 'sig']) || typeof x.sig !== 'string') return null;
  const rec = checkReceiptShape(x.rec);
  return rec === null ? null : { rec, sig: x.sig };
}

/** The receipt of a `{rec, sig}` signed by `hostPubkey`; null for any defect. */
export function verifyReceipt(signed: unknown, hostPubkey: string): DeliveryReceipt | null {
  const parsed = parseSignedReceipt(signed);
  return parsed !== null && verifyCanonical(hostPubkey, parsed.rec, parsed.sig) ? parsed.rec : null;
}

/** The relay item id of a receipt: `receipt:<msg>:<recipient>:<seq>`. */
export function receiptItemId(rec: Pick<DeliveryReceipt, 'msg' | 'recipient' | 'seq'>): string {
  return `receipt:${rec.msg}:${rec.recipient}:${rec.seq}`;
}

/** The wire text of a receipt item: canonical {rec, sig}. */
export function receiptWire(signed: SignedReceipt): string {
  return canonicalJson({ rec: signed.rec, sig: signed.sig });
}

/** The `{rec, sig}` of receipt wire bytes (signature not checked); null when not JSON or malformed. */
export function parseReceiptWire(wire: string | Uint8Array): SignedReceipt | null {
  return parseSignedReceipt(parseJsonWire(wire));
}

/**
 * What a sender does with `incoming` for a (message, recipient) whose best receipt so far is
 * `current`: the higher rank wins, then the higher seq; the same record again is a duplicate.
 */
export function compareReceipts(current: DeliveryReceipt | null, incoming: DeliveryReceipt): 'accepted' | 'duplicate' | 'stale' {
  if (current === null) return 'accepted';
  if (canonicalJson(current) === canonicalJson(incoming)) return 'duplicate';
  const byRank = receiptRank(incoming.state) - receiptRank(current.state);
  if (byRank !== 0) return byRank > 0 ? 'accepted' : 'stale';
  return incoming.seq > current.seq ? 'accepted' : 'stale';
}
