// Pull and ack (design §4, protocol.md §3.4–§3.5, §7.7). A stale epoch is a 409 that tells the
// receiver to start again from 0; an ack past the head is BAD_ACK ("treat as an epoch change").
// A pull may leave the epoch out; an ack may not: it could delete items of an epoch its sender never saw.
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

const EPOCH_CHANGED = 'relay epoch changed: pull again from 0';

/** The 409 EPOCH refusal, naming the current epoch (and whatever `fields` add). */
function epochRefusal(ctx: CoreContext, message: string, fields: Record<string, unknown> = {}): RelayError {
  return new RelayError(409, message, 'EPOCH', { epoch: ctx.epoch, ...fields });
}

/** `limit` absent → max_pull; below 1 → 1; above max_pull → max_pull (protocol.md §7.11). */
export function clampLimit(limit: string | undefined, maxPull: number): number {
  if (limit === undefined || limit === '') return maxPull;
  const value = Number(limit);
  if (!Number.isFinite(value)) throw badRequest('limit must be a number');
  return Math.min(maxPull, Math.max(1, Math.trunc(value)));
}

export async function pull(ctx: CoreContext, caller: Enrolment, query: PullQuery): Promise<EncodedJson> {
  if (query.epoch !== undefined && query.epoch !== ctx.epoch) throw epochRefusal(ctx, EPOCH_CHANGED);
  const afterText = query.after ?? '0';
  const after = Number(afterText);
  if (!DECIMAL.test(afterText) || !Number.isSafeInteger(after)) throw badRequest('after must be a non-negative integer');
  const limit = clampLimit(query.limit, ctx.config.limits.max_pull);
  const answer = await ctx.store.read(async (tx) => {
    const page = await tx.items.pull(caller.hostPubkey, after, limit, ctx.config.limits.max_pull_bytes);
    const headSeq = await tx.items.headSeq(caller.hostPubkey);
    const lastSeq = page.items.at(-1)?.seq ?? after;
    return encodePullPage({ epoch: ctx.epoch, headSeq, lastSeq, more: page.more }, page.items);
  });
  failPoint('relay.pull.before-response');
  return answer;
}

export async function ack(ctx: CoreContext, caller: Enrolment, body: unknown) {
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const headOf = () => ctx.store.read((tx) => tx.items.headSeq(caller.hostPubkey));
  const epoch = fields['epoch'];
  if (epoch !== ctx.epoch) {
    const named = epoch !== undefined && epoch !== null && epoch !== '';
    throw epochRefusal(ctx, named ? EPOCH_CHANGED : 'an ack must name the relay epoch: pull again from 0', { head_seq: await headOf() });
  }
  const through = fields['through'];
  const answer = await ctx.store.transaction(async (tx) => {
    const headSeq = await tx.items.headSeq(caller.hostPubkey);
    if (typeof through !== 'number' || !Number.isSafeInteger(through) || through < 0) {
      throw new RelayError(400, 'through must be a non-negative integer', 'BAD_ACK');
    }
    if (through > headSeq) throw new RelayError(400, 'ack beyond the last allocated seq: treat as an epoch change', 'BAD_ACK');
    const deleted = await tx.items.ack(caller.hostPubkey, through);
    const ackedThrough = await tx.items.ackedThrough(caller.hostPubkey);
    failPoint('relay.ack.before-commit');
    return { acked_through: ackedThrough, deleted, head_seq: headSeq };
  });
  failPoint('relay.ack.after-commit');
  return answer;
}
