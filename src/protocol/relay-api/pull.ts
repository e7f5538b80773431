// Pull (protocol.md §3.4, §7.11): GET /v2/relay/items?after=<seq>&limit=<n>&epoch=<epoch>[&wait=<s>]
// → 200 {epoch, head_seq, items:[…], last_seq, more}. A stale epoch is 409 EPOCH, judged first.
// `wait` (ours; a relay that advertises `max_wait_s`) holds a pull that finds nothing up to that many seconds.
import { isPlainObject, isPositiveSafeInteger } from '../validate.ts';
import { readReply, type Reply, type WireAnswer } from './answer.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

export interface PullQuery {
  after?: string | undefined;
  limit?: string | undefined;
  epoch?: string | undefined;
  wait?: string | undefined;
}

export interface PullRequest {
  after: number;
  limit: number;
  /** seconds the pull may be held when nothing is there (0: answer at once), at most the relay's max_wait_s */
  waitS: number;
}

export interface PulledItem {
  seq: number;
  kind: string;
  item_id: string;
  sender_pubkey: string;
  wire_b64: string;
}

export interface PullPage {
  epoch: string;
  head_seq: number;
  /** the items a host can read (others are left out: they are pulled again, never applied) */
  items: PulledItem[];
  more: boolean;
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** The `after` cursor of v2 and v1 pulls: a decimal safe integer, 0 when absent. */
export function parseSeqCursor(text: string | undefined): Parsed<number> {
  const after = Number(text ?? '0');
  if (!DECIMAL.test(text ?? '0') || !Number.isSafeInteger(after)) return refused(new Refusal('BAD_PULL', { field: 'after', shape: 'a non-negative integer' }));
  return parsed(after);
}

/** `limit` absent → max_pull; below 1 → 1; above max_pull → max_pull (protocol.md §7.11). */
export function clampLimit(limit: string | undefined, maxPull: number): Parsed<number> {
  if (limit === undefined || limit === '') return parsed(maxPull);
  const value = Number(limit);
  if (!Number.isFinite(value)) return refused(new Refusal('BAD_PULL', { field: 'limit', shape: 'a number' }));
  return parsed(Math.min(maxPull, Math.max(1, Math.trunc(value))));
}

/** `wait` absent → 0; a non-negative integer of seconds, lowered to max_wait_s. */
export function clampWait(wait: string | undefined, maxWaitS: number): Parsed<number> {
  if (wait === undefined || wait === '') return parsed(0);
  const value = Number(wait);
  if (!DECIMAL.test(wait) || !Number.isSafeInteger(value))
    return refused(new Refusal('BAD_PULL', { field: 'wait', shape: 'a non-negative integer of seconds' }));
  return parsed(Math.min(value, maxWaitS));
}

export function parsePullQuery(query: PullQuery, relay: { epoch: string; maxPull: number; maxWaitS: number }): Parsed<PullRequest> {
  if (query.epoch !== undefined && query.epoch !== relay.epoch) {
    return refused(new Refusal('EPOCH', { why: 'relay epoch changed' }, { epoch: relay.epoch }));
  }
  const after = parseSeqCursor(query.after);
  if (!after.ok) return after;
  const limit = clampLimit(query.limit, relay.maxPull);
  if (!limit.ok) return limit;
  const wait = clampWait(query.wait, relay.maxWaitS);
  return wait.ok ? parsed({ after: after.value, limit: limit.value, waitS: wait.value }) : wait;
}

export function isPulledItem(x: unknown): x is PulledItem {
  return (
    isPlainObject(x) &&
    isPositiveSafeInteger(x['seq']) &&
    typeof x['kind'] === 'string' &&
    typeof x['item_id'] === 'string' &&
    typeof x['sender_pubkey'] === 'string' &&
    typeof x['wire_b64'] === 'string'
  );
}

function readPage(body: Record<string, unknown>): PullPage | null {
  const { epoch, head_seq: headSeq, items, more } = body;
  if (typeof epoch !== 'string' || typeof headSeq !== 'number' || !Array.isArray(items)) return null;
  return { epoch, head_seq: headSeq, items: (items as unknown[]).filter(isPulledItem), more: more === true };
}

export function readPullAnswer(answer: WireAnswer): Reply<PullPage> {
  return readReply(answer, readPage);
}

/** The epoch an EPOCH refusal names (the relay's current one), or null. */
export function refusedEpoch(body: Record<string, unknown>): string | null {
  const epoch = body['epoch'];
  return typeof epoch === 'string' && epoch !== '' ? epoch : null;
}
