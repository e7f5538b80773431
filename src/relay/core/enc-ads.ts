// Encryption-key advertisements (design §2, protocol.md §3.8). Only signed ads are stored; lookups
// answer only for live enrolments; an ambiguous v1 name answers nothing.
import { canonicalJson } from '../../protocol/canonical.ts';
import type { EncAdV1Request, EncAdV2Request } from '../../protocol/relay-api/enc-key.ts';
import { Refusal } from '../../protocol/relay-api/refusals.ts';
import type { EncAd, Enrolment, RelayReader } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import { resolveV1Name } from './v1-names.ts';

const refused = (reason: string): Refusal => new Refusal('ENC_AD_REFUSED', { reason });

export async function publishEncAdV2(ctx: CoreContext, caller: Enrolment, checked: EncAdV2Request): Promise<{ ok: true }> {
  await ctx.store.transaction(async (tx) => {
    const stored = await tx.hostRecords.encAd(caller.hostPubkey);
    if (stored !== null && stored.version === 2 && stored.iat >= checked.iatMs) throw refused('not newer than the stored ad');
    await tx.hostRecords.putEncAd({
      hostPubkey: caller.hostPubkey, encPub: checked.ad.enc_pub, version: 2, record: canonicalJson(checked.ad),
      sig: checked.sig, iat: checked.iatMs, exp: checked.expMs, at: ctx.nowMs(),
    });
  });
  return { ok: true };
}

export async function publishEncAdV1(ctx: CoreContext, caller: Enrolment, { encPub, sig }: EncAdV1Request): Promise<{ ok: true }> {
  await ctx.store.transaction(async (tx) => {
    // a legacy ad has no time: it never replaces a signed v2 ad, which could roll the key back
    if ((await tx.hostRecords.encAd(caller.hostPubkey))?.version === 2) throw refused('a signed v2 ad is stored for this host');
    const now = ctx.nowMs();
    await tx.hostRecords.putEncAd({ hostPubkey: caller.hostPubkey, encPub, version: 1, record: null, sig, iat: now, exp: null, at: now });
  });
  return { ok: true };
}

function lookupAnswer(enrolment: Enrolment, ad: EncAd) {
  return ad.version === 2 && ad.record !== null
    ? { host: enrolment.hostName, host_pubkey: enrolment.hostPubkey, enc_pub: ad.encPub, ad: JSON.parse(ad.record) as unknown, ad_sig: ad.sig }
    : { host: enrolment.hostName, host_pubkey: enrolment.hostPubkey, enc_pub: ad.encPub, sig: ad.sig };
}

async function answerFor(tx: RelayReader, enrolment: Enrolment | null) {
  if (enrolment === null || enrolment.revokedAt !== null) throw new Refusal('UNKNOWN_HOST');
  const ad = await tx.hostRecords.encAd(enrolment.hostPubkey);
  if (ad === null) throw new Refusal('UNKNOWN_HOST');
  return lookupAnswer(enrolment, ad);
}

export function lookupEncAdByKey(ctx: CoreContext, key: string) {
  return ctx.store.read(async (tx) => answerFor(tx, await tx.enrolments.get(key)));
}

/** v1: by name, under the v1 name rules; an ambiguous name answers nothing. */
export function lookupEncAdByName(ctx: CoreContext, caller: Enrolment, name: string) {
  return ctx.store.read(async (tx) => answerFor(tx, (await resolveV1Name(tx, caller, name)).found));
}
