// The per-item results of a push (protocol.md §3.3): every reason a relay gives in
// `rejected:<reason>`, whether the same bytes can ever pass on that relay, and a sentence for people.
// The relay's core rejects items by these codes, the host decides final-or-retry by them, and the
// relay's metrics count them: one list on both sides of the seam.

/**
 * `final`: the same wire bytes can never pass on this relay (a malformed or oversized item, one it
 * will not carry, another item under the same id), so the sender stops using this relay for the row.
 * The others pass later: a rate window ends, a queue drains, a target enrols or names the sender in
 * its allowlist (design §2 "Rotation", §7), and the sender keeps the row with backoff.
 */
export const ITEM_REFUSALS = {
  rate: { final: false, sentence: 'the sender pushed more requests this minute than the relay takes' },
  'bad item id': { final: true, sentence: 'the item id is empty or too long' },
  'bad kind': { final: true, sentence: 'the item is neither an envelope nor a receipt' },
  'bad targets': { final: true, sentence: 'the item names no target, too many, or malformed ones' },
  'target not enrolled': { final: false, sentence: 'a target host is not enrolled at this relay (yet)' },
  'sender not accepted by target': { final: false, sentence: "a target's sender list does not name this host (yet)" },
  'duplicate target': { final: true, sentence: 'the item names one target twice' },
  'bad wire': { final: true, sentence: 'the wire bytes are not base64 of JSON' },
  'item over size limit': { final: true, sentence: "the item is larger than the relay's max_item_bytes" },
  'bad envelope': { final: true, sentence: 'the envelope is malformed' },
  'item id is not the envelope id': { final: true, sentence: "the item id differs from the envelope's id" },
  'envelope body is not sealed': { final: true, sentence: "the envelope's body is not sealed to the target" },
  'bad receipt': { final: true, sentence: 'the receipt is malformed' },
  'item id is not the receipt id': { final: true, sentence: "the item id differs from the receipt's id" },
  'receipt is not signed by the sending host': { final: true, sentence: 'the receipt is not signed by the host pushing it' },
  conflict: { final: true, sentence: 'another item was accepted under this id with other bytes' },
  'quota:queue_items': { final: false, sentence: "the target's queue holds as many items as the relay allows" },
  'quota:queue_bytes': { final: false, sentence: "the target's queue holds as many bytes as the relay allows" },
  'quota:sender_items': { final: false, sentence: "this sender's share of the target's queue is full (items)" },
  'quota:sender_bytes': { final: false, sentence: "this sender's share of the target's queue is full (bytes)" },
  'quota:account_items': { final: false, sentence: "the target account's queues hold as many items as the relay allows" },
  'quota:account_bytes': { final: false, sentence: "the target account's queues hold as many bytes as the relay allows" },
} as const satisfies Record<string, { final: boolean; sentence: string }>;

export type ItemRefusalCode = keyof typeof ITEM_REFUSALS;

/** A refused item: its code, and what exactly was wrong where the code carries it (`bad envelope: <what>`). */
export interface ItemRefusal {
  code: ItemRefusalCode;
  detail?: string;
}

/** An item's outcome as counted: stored, stored before, or refused by code. */
export type ItemOutcomeCode = 'accepted' | 'duplicate' | ItemRefusalCode;

/** The result status a relay answers: `rejected:<code>` or `rejected:<code>: <detail>`. */
export function refusalStatus(refusal: ItemRefusal): `rejected:${string}` {
  return refusal.detail === undefined ? `rejected:${refusal.code}` : `rejected:${refusal.code}: ${refusal.detail}`;
}

/** What a sender makes of a `rejected:` status; a reason this build does not know is retried, never final. */
export interface ReadRefusal {
  code: ItemRefusalCode | null;
  reason: string;
  final: boolean;
}

/** The refusal in a result status, or null when the status is not `rejected:…`. */
export function readRefusalStatus(status: string): ReadRefusal | null {
  if (!status.startsWith('rejected:')) return null;
  const reason = status.slice('rejected:'.length);
  const code = refusalCodeOf(reason);
  return { code, reason, final: code !== null && ITEM_REFUSALS[code].final };
}

function refusalCodeOf(reason: string): ItemRefusalCode | null {
  if (Object.hasOwn(ITEM_REFUSALS, reason)) return reason as ItemRefusalCode;
  const colon = reason.indexOf(': ');
  if (colon === -1) return null;
  const code = reason.slice(0, colon);
  return code === 'bad envelope' ? code : null;
}
