// Push (design §3, protocol.md §3.3): the pure checks of every item, then the store's half
// (push-writes.ts: one transaction per item), then the signed accept receipt of each stored item,
// which goes out only after its commit. The crash drills' `relay.push.after-commit` point is reached
// once per request, after every item's transaction has settled.
import { failPoint } from '../../failpoint.ts';
import { signAccept, type RelayAccept } from '../../protocol/records/accept.ts';
import { refusalStatus, type ItemOutcomeCode } from '../../protocol/relay-api/item-results.ts';
import type { PushRequest, PushResult } from '../../protocol/relay-api/push.ts';
import type { Enrolment } from '../store/relay-store.ts';
import { checkItem } from './item-checks.ts';
import { isoTime, type CoreContext } from './context.ts';
import type { ItemOutcome } from './push-writes.ts';

export async function push(ctx: CoreContext, sender: Enrolment, { items }: PushRequest): Promise<{ results: PushResult[] }> {
  const checked = items.map((raw) => checkItem(raw, sender.hostPubkey, ctx.config.limits));
  const outcomes = await ctx.pushWriter.write(sender.hostPubkey, checked);
  failPoint('relay.push.after-commit');
  const results = checked.map((item, i) => answer(ctx, sender, item.itemId, outcomes[i] as ItemOutcome));
  ctx.observer.itemsPushed(outcomes.map((outcome, i) => outcomeCode(outcome, results[i] as PushResult)));
  return { results };
}

function outcomeCode(outcome: ItemOutcome, result: PushResult): ItemOutcomeCode {
  return 'rejected' in outcome ? outcome.rejected.code : result.status === 'accepted' ? 'accepted' : 'duplicate';
}

function answer(ctx: CoreContext, sender: Enrolment, itemId: string, outcome: ItemOutcome): PushResult {
  if ('rejected' in outcome) return { item_id: itemId, status: refusalStatus(outcome.rejected), targets: [] };
  const { stored } = outcome;
  const accept: RelayAccept = {
    v: 1,
    type: 'relay-accept',
    relay_pubkey: ctx.relayKey.publicKey,
    epoch: ctx.epoch,
    sender_pubkey: sender.hostPubkey,
    item_id: itemId,
    targets: stored.map((t) => ({ host_pubkey: t.hostPubkey, seq: t.seq, wire_hash: t.wireHash })),
    // a duplicate repeats the first acceptance, so a retry never moves the sender's deadline
    at: isoTime(Math.min(...stored.map((t) => t.acceptedAt))),
  };
  return {
    item_id: itemId,
    status: stored.some((t) => t.isNew) ? 'accepted' : 'duplicate',
    targets: stored.map((t) => ({ host_pubkey: t.hostPubkey, seq: t.seq })),
    accept,
    sig: signAccept(accept, ctx.relayKey),
  };
}
