// GET /v2/relay/info (design §1, protocol.md §3.1): who the relay is, its epoch and limits, and
// for a caller with a valid hop, where its queue stands.
import type { RelayLimits } from '../config.ts';
import type { Enrolment } from '../store/relay-store.ts';
import { isoTime, type CoreContext } from './context.ts';
import { v1EncKeyOf } from './enc-ads.ts';

/** The limits as advertised: every limit, then the per-account quotas again under their older names. */
function advertisedLimits(limits: RelayLimits) {
  return { ...limits, max_account_items: limits.max_owner_items, max_account_bytes: limits.max_owner_bytes };
}

export async function info(ctx: CoreContext, caller: Enrolment | null) {
  const base = { v: 2, relay_pubkey: ctx.relayKey.publicKey, epoch: ctx.epoch, version: ctx.version, limits: advertisedLimits(ctx.config.limits) };
  if (caller === null) return base;
  const you = await ctx.store.read(async (tx) => {
    const ad = await tx.hostRecords.encAd(caller.hostPubkey);
    return {
      host: caller.hostName,
      pubkey: caller.hostPubkey,
      head_seq: await tx.items.headSeq(caller.hostPubkey),
      acked_through: await tx.items.ackedThrough(caller.hostPubkey),
      enc_ad: ad === null ? null : { enc_pub: ad.encPub, exp: ad.exp === null ? null : isoTime(ad.exp), v1: v1EncKeyOf(ad) },
    };
  });
  return { ...base, you };
}
