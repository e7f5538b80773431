// Pull and ack (design §4, protocol.md §3.4–§3.5, §7.7). A stale epoch is a 409 that tells the
// receiver to start again from 0; an ack past the head is BAD_ACK ("treat as an epoch change").
// A pull may leave the epoch out; an ack may not: it could delete items of an epoch its sender never saw.
import { failPoint } from '../../failpoint.ts';
import { ackBeyondHead } from '../../protocol/relay-api/ack.ts';
import type { PullRequest } from '../../protocol/relay-api/pull.ts';
import { takeParsed, type Parsed } from '../../protocol/relay-api/refusals.ts';
import type { Enrolment, ReadPriority } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import type { EncodedJson } from './encoded-json.ts';
import type { PageRead } from './held-pulls.ts';
import { encodePullPage } from './pull-page.ts';

/**
 * A page of the caller's items after `after`. With `waitS` and nothing there, the pull is held
 * (held-pulls.ts) until an item for the caller commits, `waitS` ends or the process stops. The hop
 * was checked when the request arrived; a held pull is not checked again (protocol.md §3.4).
 */
export async function pull(ctx: CoreContext, caller: Enrolment, { after, limit, waitS }: PullRequest, gone?: AbortSignal): Promise<EncodedJson> {
  const read = (priority: ReadPriority): Promise<PageRead<EncodedJson>> =>
    ctx.store.read(async (tx) => {
      // asked together, so that a backend with a round trip per batch (PostgreSQL) sends them as one
      const [page, headSeq] = await Promise.all([
        tx.items.pull(caller.hostPubkey, after, limit, ctx.config.limits.max_pull_bytes),
        tx.items.headSeq(caller.hostPubkey),
      ]);
      const lastSeq = page.items.at(-1)?.seq ?? after;
      return { answer: encodePullPage({ epoch: ctx.epoch, headSeq, lastSeq, more: page.more }, page.items), empty: page.items.length === 0 };
    }, priority);
  const answer = await ctx.heldPulls.pull(caller.hostPubkey, waitS * 1000, read, gone);
  failPoint('relay.pull.before-response');
  return answer;
}

/** `request` as parsed, refusal included: an EPOCH refusal names the caller's head_seq, which only the store knows. */
export async function ack(ctx: CoreContext, caller: Enrolment, request: Parsed<{ through: number }>) {
  if (!request.ok && request.refusal.code === 'EPOCH') {
    request.refusal.withMembers({ head_seq: await ctx.store.lookup((tx) => tx.items.headSeq(caller.hostPubkey)) });
  }
  const { through } = takeParsed(request);
  const answer = await ctx.store.transaction(async (tx) => {
    const headSeq = await tx.items.headSeq(caller.hostPubkey);
    if (through > headSeq) throw ackBeyondHead();
    const deleted = await tx.items.ack(caller.hostPubkey, through);
    const ackedThrough = await tx.items.ackedThrough(caller.hostPubkey);
    failPoint('relay.ack.before-commit');
    return { acked_through: ackedThrough, deleted, head_seq: headSeq };
  });
  failPoint('relay.ack.after-commit');
  return answer;
}
