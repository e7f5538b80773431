// Sender allowlists (design §2, protocol.md §3.6): a target lists the keys it accepts pushes from.
import { canonicalJson } from '../../protocol/canonical.ts';
import { checkSenderList } from '../../protocol/records/sender-list.ts';
import type { Enrolment } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import { badRequest, RelayError } from './relay-error.ts';

export async function publishSenderList(ctx: CoreContext, caller: Enrolment, body: unknown): Promise<{ ok: true }> {
  const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const list = fields['list'];
  const named = typeof list === 'object' && list !== null ? (list as Record<string, unknown>)['host_pubkey'] : undefined;
  if (typeof named === 'string' && named !== caller.hostPubkey) throw new RelayError(403, 'a sender list may only be published by its own host');
  const checked = checkSenderList(list, fields['sig'], ctx.nowMs());
  if (!checked.ok) {
    switch (checked.problem) {
      case 'iat in the future': throw badRequest('sender list iat is in the future');
      case 'bad signature': throw new RelayError(401, 'bad sender list signature');
      default: throw badRequest(`sender list refused: ${checked.problem}`);
    }
  }
  await ctx.store.transaction(async (tx) => {
    const stored = await tx.hostRecords.senderList(caller.hostPubkey);
    if (stored !== null && stored.iat >= checked.iatMs) throw new RelayError(409, 'a sender list at least as new is already stored');
    await tx.hostRecords.putSenderList({
      targetPubkey: caller.hostPubkey,
      senders: [...new Set(checked.list.senders)],
      iat: checked.iatMs,
      record: canonicalJson(checked.list),
      sig: fields['sig'] as string,
    });
  });
  return { ok: true };
}
