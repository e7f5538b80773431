// Enrolment (design §2, §8; protocol.md §3.2): a signed challenge, then the authority's decision,
// stored by key. Names are labels, unique only inside a proven account; revoked stays revoked; a
// weaker authority never overwrites the account a stronger one recorded.
import { canonicalJson } from '../../protocol/canonical.ts';
import { verifySignature } from '../../protocol/keys.ts';
import type { ChallengeRequest, EnrolRequest } from '../../protocol/relay-api/enrolment.ts';
import { Refusal } from '../../protocol/relay-api/refusals.ts';
import { authorityStrength } from '../authority/host-key.ts';
import type { Enrolment } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import { bindCloudKey } from './hosted.ts';

export async function issueChallenge(ctx: CoreContext, { pubkey }: ChallengeRequest): Promise<{ challenge: string }> {
  const challenge = await ctx.challenges.issue(pubkey, ctx.nowMs());
  if (challenge === null) throw new Refusal('CHALLENGES_FULL');
  return { challenge };
}

export async function enrol(ctx: CoreContext, { host, pubkey, ownerFp, sig, proof }: EnrolRequest): Promise<{ ok: true }> {
  const challenge = await ctx.challenges.take(pubkey, ctx.nowMs());
  if (challenge === null) throw new Refusal('NO_CHALLENGE');
  const signed = canonicalJson({ v: 1, challenge, host, pubkey, owner_fp: ownerFp });
  if (!verifySignature(pubkey, signed, sig)) throw new Refusal('BAD_ENROLMENT_SIGNATURE');

  const known = await ctx.store.lookup((tx) => tx.enrolments.get(pubkey));
  if (known?.revokedAt != null) throw revoked();

  const decision = await ctx.authority.authorize({ host_name: host, host_pubkey: pubkey, owner_fp: ownerFp, proof, challenge });
  if (!decision.ok) {
    if (decision.unavailable === true) throw new Refusal('AUTHORITY_UNAVAILABLE', { what: 'enrolment is unavailable', reason: decision.reason });
    throw new Refusal('DENIED', { reason: `enrolment denied: ${decision.reason}` });
  }

  await ctx.store.transaction(async (tx) => {
    const existing = await tx.enrolments.get(pubkey);
    if (existing?.revokedAt != null) throw revoked();
    if (existing === null && (await tx.enrolments.countLive()) >= ctx.maxLiveEnrolments) {
      throw new Refusal('ENROLMENTS_FULL');
    }
    const keepStronger = existing !== null && existing.account !== null && authorityStrength(existing.authorizedBy) > ctx.authority.strength;
    const next: Enrolment = {
      hostPubkey: pubkey,
      hostName: host,
      ownerFp,
      account: keepStronger ? existing.account : decision.account,
      org: keepStronger ? existing.org : decision.org,
      authorizedBy: keepStronger ? existing.authorizedBy : ctx.authority.name,
      enrolledAt: existing?.enrolledAt ?? ctx.nowMs(),
      revokedAt: null,
    };
    if (next.account !== null && (await tx.enrolments.nameTakenInAccount(next.account, host, pubkey))) {
      throw new Refusal('NAME_TAKEN', { host });
    }
    await tx.enrolments.put(next);
    if (decision.binding !== undefined) await bindCloudKey(tx, pubkey, decision.binding, ctx.nowMs());
  });
  return { ok: true };
}

function revoked(): Refusal {
  return new Refusal('REVOKED');
}
