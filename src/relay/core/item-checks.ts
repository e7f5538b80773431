// The checks of one pushed item that need no store (protocol.md §3.3), in the protocol's order.
// The store checks (`target not enrolled`, `sender not accepted by target`) sit between `bad
// targets` and `duplicate target`; the core runs them inside the item's transaction.
import { fromBase64 } from '../../protocol/base64.ts';
import { sha256Hex } from '../../protocol/hash.ts';
import { checkEnvelopeShape, isSealed } from '../../protocol/records/envelope.ts';
import { MAX_ITEM_ID_CHARS } from '../../protocol/records/accept.ts';
import { parseSignedReceipt, receiptItemId, verifyReceipt } from '../../protocol/records/receipt.ts';
import { isPlainObject, parseJsonWire } from '../../protocol/validate.ts';
import type { ItemRefusal, ItemRefusalCode } from '../../protocol/relay-api/item-results.ts';
import type { RelayLimits } from '../config.ts';
import type { ItemKind } from '../store/relay-store.ts';

export interface ParsedTarget {
  hostPubkey: string;
  wire: Buffer;
  wireHash: string;
}

/** Where in the protocol's order a pure check failed: before or after the store checks. */
export type PureFailure = { beforeStoreChecks: boolean; refusal: ItemRefusal };

export interface CheckedItem {
  itemId: string;
  kind: ItemKind;
  /** the targets' keys as sent (present once `bad targets` passed) */
  targetKeys: string[];
  targets: ParsedTarget[];
  failure: PureFailure | null;
}

const early = (code: ItemRefusalCode): PureFailure => ({ beforeStoreChecks: true, refusal: { code } });
const late = (refusal: ItemRefusal | ItemRefusalCode): PureFailure => ({
  beforeStoreChecks: false,
  refusal: typeof refusal === 'string' ? { code: refusal } : refusal,
});

export function checkItem(raw: unknown, senderPubkey: string, limits: RelayLimits): CheckedItem {
  const item = isPlainObject(raw) ? raw : null;
  const itemIdValue = item?.['item_id'];
  const itemId = typeof itemIdValue === 'string' ? itemIdValue : '';
  const result: CheckedItem = { itemId, kind: 'envelope', targetKeys: [], targets: [], failure: null };
  if (itemId === '' || itemId.length > MAX_ITEM_ID_CHARS) return { ...result, failure: early('bad item id') };
  const kind = item?.['kind'];
  if (kind !== 'envelope' && kind !== 'receipt') return { ...result, failure: early('bad kind') };
  result.kind = kind;
  const targets = item?.['targets'];
  if (!Array.isArray(targets) || targets.length === 0 || targets.length > limits.max_targets) {
    return { ...result, failure: early('bad targets') };
  }
  if (targets.some((t) => !isPlainObject(t) || typeof t['host_pubkey'] !== 'string' || typeof t['wire_b64'] !== 'string')) {
    return { ...result, failure: early('bad targets') };
  }
  const plain = targets as Array<Record<string, string>>;
  result.targetKeys = plain.map((t) => t['host_pubkey'] ?? '');
  result.failure = checkTargets(result, plain, senderPubkey, limits);
  return result;
}

function checkTargets(result: CheckedItem, targets: Array<Record<string, string>>, senderPubkey: string, limits: RelayLimits): PureFailure | null {
  if (new Set(result.targetKeys).size !== result.targetKeys.length) return late('duplicate target');
  const wires = targets.map((t) => fromBase64(t['wire_b64']));
  const values = wires.map((w) => (w === null ? undefined : parseJsonWire(w)));
  if (values.some((v) => v === undefined)) return late('bad wire');
  const sizes = wires as Buffer[];
  if (sizes.some((w) => w.length > limits.max_item_bytes)) return late('item over size limit');
  const contentFailure =
    result.kind === 'envelope'
      ? values.map((v) => checkEnvelopeContent(v, result.itemId)).find((r) => r !== null)
      : checkReceiptContents(values, result.itemId, senderPubkey);
  if (contentFailure !== null && contentFailure !== undefined) return late(contentFailure);
  result.targets = sizes.map((wire, i) => ({ hostPubkey: result.targetKeys[i] ?? '', wire, wireHash: sha256Hex(wire) }));
  return null;
}

function checkEnvelopeContent(value: unknown, itemId: string): ItemRefusal | ItemRefusalCode | null {
  const shape = checkEnvelopeShape(value);
  if (!shape.ok) return { code: 'bad envelope', detail: shape.reason };
  if (shape.envelope.id !== itemId) return 'item id is not the envelope id';
  if (!isSealed(shape.envelope)) return 'envelope body is not sealed';
  return null;
}

/** Each check over all targets before the next (protocol.md §7.5). */
function checkReceiptContents(values: unknown[], itemId: string, senderPubkey: string): ItemRefusalCode | null {
  const signed = values.map(parseSignedReceipt);
  if (signed.some((r) => r === null)) return 'bad receipt';
  if (signed.some((r) => r !== null && receiptItemId(r.rec) !== itemId)) return 'item id is not the receipt id';
  if (values.some((v) => verifyReceipt(v, senderPubkey) === null)) return 'receipt is not signed by the sending host';
  return null;
}
