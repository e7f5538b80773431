// Sender allowlists (design §2, protocol.md §3.6): a target lists the keys it accepts pushes from.
import { canonicalJson } from '../../protocol/canonical.ts';
import { Refusal } from '../../protocol/relay-api/refusals.ts';
import type { SenderListRequest } from '../../protocol/relay-api/senders.ts';
import type { Enrolment } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';

export async function publishSenderList(ctx: CoreContext, caller: Enrolment, checked: SenderListRequest): Promise<{ ok: true }> {
  await ctx.store.transaction(async (tx) => {
    const stored = await tx.hostRecords.senderList(caller.hostPubkey);
    if (stored !== null && stored.iat >= checked.iatMs) throw new Refusal('SENDER_LIST_NOT_NEWER');
    await tx.hostRecords.putSenderList({
      targetPubkey: caller.hostPubkey,
      senders: [...new Set(checked.list.senders)],
      iat: checked.iatMs,
      record: canonicalJson(checked.list),
      sig: checked.sig,
    });
  });
  return { ok: true };
}
