// Enrolment (design §2, §8; protocol.md §3.2): a signed challenge, then the authority's decision,
// stored by key. Names are labels, unique only inside a proven account; revoked stays revoked; a
// weaker authority never overwrites the account a stronger one recorded.
import { canonicalJson } from '../../protocol/canonical.ts';
import { isPublicKey, verifySignature } from '../../protocol/keys.ts';
import { OWNER_FP_RE, RELAY_HOST_RE } from '../../protocol/names.ts';
import { authorityStrength } from '../authority/host-key.ts';
import type { Enrolment } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import { bindCloudKey } from './hosted.ts';
import { badRequest, RelayError } from './relay-error.ts';

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)[name] : undefined;
}

function hostAndKey(body: unknown): { host: string; pubkey: string } {
  const host = field(body, 'host');
  const pubkey = field(body, 'pubkey');
  if (typeof host !== 'string' || !RELAY_HOST_RE.test(host)) throw badRequest('missing or malformed host name');
  if (!isPublicKey(pubkey)) throw badRequest('missing or malformed host public key');
  return { host, pubkey };
}

export async function issueChallenge(ctx: CoreContext, body: unknown): Promise<{ challenge: string }> {
  const { pubkey } = hostAndKey(body);
  const challenge = await ctx.challenges.issue(pubkey, ctx.nowMs());
  if (challenge === null) throw new RelayError(503, 'too many open enrolment challenges: try again in a few minutes');
  return { challenge };
}

export async function enrol(ctx: CoreContext, body: unknown): Promise<{ ok: true }> {
  const { host, pubkey } = hostAndKey(body);
  const ownerFp = field(body, 'owner_fp');
  const sig = field(body, 'sig');
  if (typeof ownerFp !== 'string' || !OWNER_FP_RE.test(ownerFp)) throw badRequest('missing or malformed owner_fp');
  if (typeof sig !== 'string') throw badRequest('missing signature');

  const challenge = await ctx.challenges.take(pubkey, ctx.nowMs());
  if (challenge === null) throw new RelayError(401, 'no open challenge for this key: request a new one');
  const signed = canonicalJson({ v: 1, challenge, host, pubkey, owner_fp: ownerFp });
  if (!verifySignature(pubkey, signed, sig)) throw new RelayError(401, 'bad enrolment signature');

  const known = await ctx.store.read((tx) => tx.enrolments.get(pubkey));
  if (known?.revokedAt != null) throw revoked();

  const decision = await ctx.authority.authorize({ host_name: host, host_pubkey: pubkey, owner_fp: ownerFp, proof: field(body, 'proof'), challenge });
  if (!decision.ok) {
    if (decision.unavailable === true) throw new RelayError(503, `enrolment is unavailable: ${decision.reason}`, 'AUTHORITY_UNAVAILABLE');
    throw new RelayError(403, `enrolment denied: ${decision.reason}`, 'DENIED');
  }

  await ctx.store.transaction(async (tx) => {
    const existing = await tx.enrolments.get(pubkey);
    if (existing?.revokedAt != null) throw revoked();
    if (existing === null && (await tx.enrolments.countLive()) >= ctx.maxLiveEnrolments) {
      throw new RelayError(503, 'this relay has reached its enrolment capacity');
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
      throw new RelayError(409, `the name ${host} is already enrolled in this account`, 'NAME_TAKEN');
    }
    await tx.enrolments.put(next);
    if (decision.binding !== undefined) await bindCloudKey(tx, pubkey, decision.binding, ctx.nowMs());
  });
  return { ok: true };
}

function revoked(): RelayError {
  return new RelayError(403, 'this host key was revoked on this relay', 'REVOKED');
}
