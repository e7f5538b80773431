// Encryption-key advertisements (design §2, protocol.md §3.8). Only signed ads are stored; lookups
// answer only for live enrolments; an ambiguous v1 name answers nothing.
import { canonicalJson } from '../../protocol/canonical.ts';
import { isEncPublicKey, isPublicKey } from '../../protocol/keys.ts';
import { checkEncAdV2, verifyEncAdV1 } from '../../protocol/records/enc-ad.ts';
import type { EncAd, Enrolment, RelayReader } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import { badRequest, RelayError } from './relay-error.ts';
import { resolveV1Name } from './v1-names.ts';

const refused = (reason: string): RelayError => badRequest(`enc-key ad refused: ${reason}`);
const unknownHost = (): RelayError => new RelayError(404, 'unknown host');

function fieldsOf(body: unknown): Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

export async function publishEncAdV2(ctx: CoreContext, caller: Enrolment, body: unknown): Promise<{ ok: true }> {
  const { ad, sig } = fieldsOf(body);
  const checked = checkEncAdV2(ad, sig, ctx.nowMs(), caller.hostPubkey);
  if (!checked.ok) throw refused(checked.reason);
  await ctx.store.transaction(async (tx) => {
    const stored = await tx.hostRecords.encAd(caller.hostPubkey);
    if (stored !== null && stored.version === 2 && stored.iat >= checked.iatMs) throw refused('not newer than the stored ad');
    await tx.hostRecords.putEncAd({
      hostPubkey: caller.hostPubkey, encPub: checked.ad.enc_pub, version: 2, record: canonicalJson(checked.ad),
      sig: sig as string, iat: checked.iatMs, exp: checked.expMs, at: ctx.nowMs(),
    });
  });
  return { ok: true };
}

export async function publishEncAdV1(ctx: CoreContext, caller: Enrolment, body: unknown): Promise<{ ok: true }> {
  const { enc_pub: encPub, sig } = fieldsOf(body);
  if (!isEncPublicKey(encPub)) throw refused('malformed');
  if (!verifyEncAdV1(caller.hostName, encPub, sig, caller.hostPubkey)) throw refused('bad signature');
  await ctx.store.transaction(async (tx) => {
    // a legacy ad has no time: it never replaces a signed v2 ad, which could roll the key back
    if ((await tx.hostRecords.encAd(caller.hostPubkey))?.version === 2) throw refused('a signed v2 ad is stored for this host');
    const now = ctx.nowMs();
    await tx.hostRecords.putEncAd({ hostPubkey: caller.hostPubkey, encPub, version: 1, record: null, sig: sig as string, iat: now, exp: null, at: now });
  });
  return { ok: true };
}

function lookupAnswer(enrolment: Enrolment, ad: EncAd) {
  return ad.version === 2 && ad.record !== null
    ? { host: enrolment.hostName, host_pubkey: enrolment.hostPubkey, enc_pub: ad.encPub, ad: JSON.parse(ad.record) as unknown, ad_sig: ad.sig }
    : { host: enrolment.hostName, host_pubkey: enrolment.hostPubkey, enc_pub: ad.encPub, sig: ad.sig };
}

async function answerFor(tx: RelayReader, enrolment: Enrolment | null) {
  if (enrolment === null || enrolment.revokedAt !== null) throw unknownHost();
  const ad = await tx.hostRecords.encAd(enrolment.hostPubkey);
  if (ad === null) throw unknownHost();
  return lookupAnswer(enrolment, ad);
}

export function lookupEncAdByKey(ctx: CoreContext, pubkey: string | undefined) {
  // a `+` of base64 may arrive decoded as a space (protocol.md §7.12)
  const key = pubkey?.replaceAll(' ', '+');
  if (!isPublicKey(key)) throw badRequest('pubkey must be a base64 host key');
  return ctx.store.read(async (tx) => answerFor(tx, await tx.enrolments.get(key)));
}

/** v1: by name, under the v1 name rules; an ambiguous name answers nothing. */
export function lookupEncAdByName(ctx: CoreContext, caller: Enrolment, host: string | undefined) {
  if (host === undefined || host === '') throw badRequest('host is required');
  return ctx.store.read(async (tx) => answerFor(tx, (await resolveV1Name(tx, caller, host)).found));
}
