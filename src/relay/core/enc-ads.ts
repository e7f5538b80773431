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
      hostPubkey: caller.hostPubkey,
      encPub: checked.ad.enc_pub,
      version: 2,
      record: canonicalJson(checked.ad),
      sig: checked.sig,
      iat: checked.iatMs,
      exp: checked.expMs,
      at: ctx.nowMs(),
      v1Sig: v1SigFor(stored, checked.ad.enc_pub),
    });
  });
  return { ok: true };
}

/** The v1 signature a new v2 ad keeps: the stored one when it names the same enc key, else none. */
function v1SigFor(stored: EncAd | null, encPub: string): string | null {
  if (stored === null || stored.encPub !== encPub) return null;
  return stored.version === 1 ? stored.sig : stored.v1Sig;
}

/**
 * The legacy v1 pair (protocol.md §3.8). Beside a signed v2 ad it is kept only when it names the
 * same enc key (reported as `you.enc_ad.v1`); a legacy ad has no time, so one naming another key never
 * replaces the v2 ad (it could roll the key back) and is refused with 410, never a 400.
 */
export async function publishEncAdV1(ctx: CoreContext, caller: Enrolment, { encPub, sig }: EncAdV1Request): Promise<{ ok: true }> {
  await ctx.store.transaction(async (tx) => {
    const stored = await tx.hostRecords.encAd(caller.hostPubkey);
    if (stored?.version === 2) {
      if (stored.encPub !== encPub) throw new Refusal('ENC_AD_V1_RETIRED', { reason: 'it names another enc key than the stored v2 ad' });
      if (stored.v1Sig !== sig) await tx.hostRecords.putEncAd({ ...stored, v1Sig: sig });
      return;
    }
    const now = ctx.nowMs();
    await tx.hostRecords.putEncAd({ hostPubkey: caller.hostPubkey, encPub, version: 1, record: null, sig, iat: now, exp: null, at: now, v1Sig: null });
  });
  return { ok: true };
}

/** The enc key of the caller's legacy v1 ad when one is stored (`you.enc_ad.v1`), else undefined. */
export function v1EncKeyOf(ad: EncAd): string | undefined {
  return ad.version === 1 || ad.v1Sig !== null ? ad.encPub : undefined;
}

function lookupAnswer(enrolment: Enrolment, ad: EncAd) {
  return ad.version === 2 && ad.record !== null
    ? {
        host: enrolment.hostName,
        host_pubkey: enrolment.hostPubkey,
        enc_pub: ad.encPub,
        ...(ad.v1Sig === null ? {} : { sig: ad.v1Sig }),
        ad: JSON.parse(ad.record) as unknown,
        ad_sig: ad.sig,
      }
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
