// Pull and ack (design §4, protocol.md §3.4–§3.5). A stale epoch is a 409 that tells the receiver
// to start again from 0; an ack past the head is BAD_ACK ("treat as an epoch change").
import { failPoint } from '../../failpoint.ts';
import type { Enrolment } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import type { EncodedJson } from './encoded-json.ts';
import { encodePullPage } from './pull-page.ts';
import { badRequest, RelayError } from './relay-error.ts';

export interface PullQuery {
  after?: string | undefined;
  limit?: string | undefined;
  epoch?: string | undefined;
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

function checkEpoch(ctx: CoreContext, epoch: unknown, extra: () => Promise<Record<string, unknown>>): Promise<void> {
  if (epoch === undefined || epoch === ctx.epoch) return Promise.resolve();
  return extra().then((fields) => {
    throw new RelayError(409, 'relay epoch changed: pull again from 0', 'EPOCH', { epoch: ctx.epoch, ...fields });
  });
}

/** `limit` absent → max_pull; below 1 → 1; above max_pull → max_pull (protocol.md §7.11). */
export function clampLimit(limit: string | undefined, maxPull: number): number {
  if (limit === undefined || limit === '') return maxPull;
  const value = Number(limit);
  if (!Number.isFinite(value)) throw badRequest('limit must be a number');
  return Math.min(maxPull, Math.max(1, Math.trunc(value)));
}

export async function pull(ctx: CoreContext, caller: Enrolment, query: PullQuery): Promise<EncodedJson> {
  await checkEpoch(ctx, query.epoch, async () => ({}));
  const afterText = query.after ?? '0';
  const after = Number(afterText);
  if (!DECIMAL.test(afterText) || !Number.isSafeInteger(after)) throw badRequest('after must be a non-negative integer');
  const limit = clampLimit(query.limit, ctx.config.limits.max_pull);
  const answer = await ctx.store.transaction(async (tx) => {
    const page = await tx.pull(caller.hostPubkey, after, limit, ctx.config.limits.max_pull_bytes);
    const headSeq = await tx.headSeq(caller.hostPubkey);
    const lastSeq = page.items.at(-1)?.seq ?? after;
    return encodePullPage({ epoch: ctx.epoch, headSeq, lastSeq, more: page.more }, page.items);
  }, { readOnly: true });
  failPoint('relay.pull.before-response');
  return answer;
}

export async function ack(ctx: CoreContext, caller: Enrolment, body: unknown) {
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const headOf = () => ctx.store.transaction((tx) => tx.headSeq(caller.hostPubkey), { readOnly: true });
  await checkEpoch(ctx, fields['epoch'], async () => ({ head_seq: await headOf() }));
  const through = fields['through'];
  const answer = await ctx.store.transaction(async (tx) => {
    const headSeq = await tx.headSeq(caller.hostPubkey);
    if (typeof through !== 'number' || !Number.isSafeInteger(through) || through < 0) {
      throw new RelayError(400, 'through must be a non-negative integer', 'BAD_ACK');
    }
    if (through > headSeq) throw new RelayError(400, 'ack beyond the last allocated seq: treat as an epoch change', 'BAD_ACK');
    const deleted = await tx.ack(caller.hostPubkey, through);
    const ackedThrough = await tx.ackedThrough(caller.hostPubkey);
    failPoint('relay.ack.before-commit');
    return { acked_through: ackedThrough, deleted, head_seq: headSeq };
  });
  failPoint('relay.ack.after-commit');
  return answer;
}
