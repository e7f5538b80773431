// Push (protocol.md §3.3): POST /v2/relay/items {items:[…]} → 200 {results:[…]}, one result per
// item. The body's shape is refused here; each item's own checks give it a `rejected:<reason>`
// result instead (src/relay/core/item-checks.ts), so one bad item never refuses the others.
import type { RelayAccept } from '../records/accept.ts';
import { isPlainObject } from '../validate.ts';
import { readReply, type Reply, type WireAnswer } from './answer.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

export interface PushTargetResult {
  host_pubkey: string;
  seq: number;
}

export interface PushResult {
  item_id: string;
  /** `accepted`, `duplicate` or `rejected:<reason>` */
  status: string;
  targets: PushTargetResult[];
  accept?: RelayAccept;
  sig?: string;
}

export interface PushAnswer {
  results: PushResult[];
}

/** A result as a host reads it: the relay's accept stays unknown until it is verified. */
export interface PushResultRead {
  item_id: string;
  status: string;
  accept: unknown;
  sig: unknown;
}

/** `{<member>:[…]}` with at most `maxBatch` entries (`what` names them in the refusal). */
export function parseBatch(body: unknown, member: string, what: string, maxBatch: number): Parsed<unknown[]> {
  const list = isPlainObject(body) ? body[member] : undefined;
  if (!Array.isArray(list)) return refused(new Refusal('BAD_PUSH', { shape: `{${member}:[…]}` }));
  if (list.length > maxBatch) return refused(new Refusal('BATCH_TOO_LARGE', { max: maxBatch, what }));
  return parsed(list);
}

export interface PushRequest {
  /** each item is checked on its own (a `rejected:` result, not a refusal) */
  items: unknown[];
}

export function parsePushRequest(body: unknown, maxBatch: number): Parsed<PushRequest> {
  const items = parseBatch(body, 'items', 'items', maxBatch);
  return items.ok ? parsed({ items: items.value }) : items;
}

/** The results by item id (the first of a repeated id), each with a string status. */
function readResults(body: Record<string, unknown>): Map<string, PushResultRead> | null {
  const list = body['results'];
  if (!Array.isArray(list)) return null;
  const byId = new Map<string, PushResultRead>();
  for (const r of list as unknown[]) {
    if (!isPlainObject(r) || typeof r['item_id'] !== 'string' || byId.has(r['item_id'])) continue;
    byId.set(r['item_id'], { item_id: r['item_id'], status: typeof r['status'] === 'string' ? r['status'] : 'no status', accept: r['accept'], sig: r['sig'] });
  }
  return byId;
}

export function readPushAnswer(answer: WireAnswer): Reply<Map<string, PushResultRead>> {
  return readReply(answer, readResults);
}
