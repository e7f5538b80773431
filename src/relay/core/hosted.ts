// The rules only a hosted relay (enrolment_authority "account-token", design §8) adds to the core:
// the cloud key binding made at enrolment, the session rule every hop must pass, and the
// revocation deny-list an operator pushes (docs/hosted-relay.md).
import { fingerprint } from '../../protocol/fingerprint.ts';
import { sha256Hex } from '../../protocol/hash.ts';
import type { AccountTokenAuthority } from '../authority/account-token.ts';
import { MAX_CLAIM_CHARS, MAX_TOKEN_LIFETIME_S } from '../authority/token-limits.ts';
import type { CloudKeyBinding } from '../authority/enrolment-authority.ts';
import { SessionCache } from '../authority/session-cache.ts';
import type { DenyEntry } from '../store/accounts.ts';
import type { Enrolment, RelayTransactor } from '../store/relay-store.ts';
import type { DenyRequestEntry, DenyRules } from '../../protocol/relay-api/admin-deny.ts';
import { Refusal, takeParsed, type Parsed } from '../../protocol/relay-api/refusals.ts';
import type { CoreContext } from './context.ts';

export { MAX_DENY_ENTRIES_PER_REQUEST, MAX_DENY_MS } from '../../protocol/relay-api/admin-deny.ts';

/** The scope an operator token needs for POST /v2/relay/admin/deny. */
export const DENY_SCOPE = 'relay:deny';
/** Live deny-list entries a relay keeps; a request that would pass it answers 503. */
export const MAX_LIVE_DENY_ENTRIES = 100_000;
/** What a deny entry must fit: a client_id is a token claim, and an entry outlives the longest token. */
export const DENY_RULES: DenyRules = { maxClaimChars: MAX_CLAIM_CHARS, minAheadMs: MAX_TOKEN_LIFETIME_S * 1000 };
/** Body cap of the deny route (1000 entries of a few hundred bytes). */
export const DENY_BODY_MAX_BYTES = 512 * 1024;

export class HostedRelay {
  readonly authority: AccountTokenAuthority;
  readonly sessions = new SessionCache();
  constructor(authority: AccountTokenAuthority) {
    this.authority = authority;
  }
}

const denied = (entry: DenyEntry): Refusal =>
  new Refusal('DENIED', { reason: `access to this relay was revoked until ${new Date(entry.untilMs).toISOString()}: ${entry.reason}` });

/**
 * Inside the enrol transaction: refuses a denied host or client, and a cloud key already bound to
 * another live host key; then binds the cloud key to this host key.
 */
export async function bindCloudKey(tx: RelayTransactor, hostPubkey: string, binding: CloudKeyBinding, nowMs: number): Promise<void> {
  const deny = await tx.accounts.findDenyEntry(fingerprint(hostPubkey), binding.clientId, nowMs);
  if (deny !== null) throw denied(deny);
  const owner = await tx.accounts.cloudKeyOwner(binding.jkt);
  if (owner !== null && owner !== hostPubkey) {
    const other = await tx.enrolments.get(owner);
    if (other !== null && other.revokedAt === null)
      throw new Refusal('DENIED', { reason: 'enrolment denied: this cloud key is certified by another live host key' });
  }
  await tx.accounts.bindCloudKey(hostPubkey, binding.jkt, nowMs);
}

/** The token of `authorization: Bearer <token>`, or null. */
function bearer(authorization: string | undefined): string | null {
  const match = /^Bearer +(\S+)\s*$/i.exec(authorization ?? '');
  return match?.[1] ?? null;
}

const tokenRefused = (reason: string): Refusal => new Refusal('TOKEN_INVALID', { token: 'access', reason });

/**
 * The session rule of a hosted relay: a signed hop is accepted only with `authorization: Bearer`
 * carrying a valid, unexpired token bound to the caller's certified cloud key, while neither the
 * caller's fingerprint nor the token's client_id is on the deny-list. Returns the refusal, or null.
 */
export async function sessionRefusal(ctx: CoreContext, hosted: HostedRelay, caller: Enrolment, authorization: string | undefined): Promise<Refusal | null> {
  const token = bearer(authorization);
  if (token === null) return new Refusal('TOKEN_REQUIRED', { route: 'relay', token: 'access', when: ' on every signed call' });
  const now = ctx.nowMs();
  const hostFp = fingerprint(caller.hostPubkey);
  const tokenHash = sha256Hex(token);
  let claims: { jti?: unknown; exp?: unknown };
  try {
    claims = hosted.authority.unverifiedClaims(token);
  } catch {
    return tokenRefused('it is not a JWT');
  }
  // refusing an expired token needs no key: this holds even while the issuer's keys are unavailable
  if (typeof claims.exp === 'number' && claims.exp * 1000 <= now) return tokenRefused('the token has expired');
  const jti = claims.jti;
  let session = typeof jti === 'string' ? hosted.sessions.get(jti, tokenHash, now) : null;
  if (session !== null && session.hostPubkey !== caller.hostPubkey) return tokenRefused('it is bound to another host');
  if (session === null) {
    const verified = await hosted.authority.verifyAccessToken(token);
    if (!verified.ok) {
      return verified.unavailable === true
        ? new Refusal('AUTHORITY_UNAVAILABLE', { what: 'cannot check the access token now', reason: verified.reason })
        : tokenRefused(verified.reason);
    }
    const { jti: verifiedJti, client_id: clientId, jkt, exp } = verified.value;
    session = { jti: verifiedJti, tokenHash, hostPubkey: caller.hostPubkey, hostFp, clientId, jkt, expMs: exp * 1000 };
  }
  const clientId = session.clientId;
  const { jkt, deny } = await ctx.store.read(async (tx) => ({
    jkt: await tx.accounts.cloudKeyOf(caller.hostPubkey),
    deny: await tx.accounts.findDenyEntry(hostFp, clientId, now),
  }));
  if (deny !== null) return denied(deny);
  if (jkt === null || jkt !== session.jkt) return tokenRefused("it is not bound to this host's certified cloud key: enrol again");
  hosted.sessions.put(session);
  return null;
}

/**
 * POST /v2/relay/admin/deny: an operator token (this issuer, this relay, scope relay:deny) adds
 * durable entries; the sessions they name are dropped at once. `request` as parsed, refusal
 * included: a malformed body is refused only to a caller whose operator token passed.
 */
export async function addDenyEntries(
  ctx: CoreContext,
  hosted: HostedRelay,
  authorization: string | undefined,
  request: Parsed<DenyRequestEntry[]>,
): Promise<{ ok: true; entries: number; sessions_dropped: number }> {
  const token = bearer(authorization);
  if (token === null) throw new Refusal('TOKEN_REQUIRED', { route: 'route', token: 'operator', when: '' });
  const verified = await hosted.authority.verifyAdminToken(token, DENY_SCOPE);
  if (!verified.ok) {
    if (verified.unavailable === true) throw new Refusal('AUTHORITY_UNAVAILABLE', { what: 'cannot check the operator token now', reason: verified.reason });
    throw new Refusal('TOKEN_INVALID', { token: 'operator', reason: verified.reason });
  }
  const now = ctx.nowMs();
  const entries: DenyEntry[] = takeParsed(request).map((entry) => ({ ...entry, addedAt: now }));
  await ctx.store.transaction(async (tx) => {
    if ((await tx.accounts.countLiveDenyEntries(now)) + entries.length > MAX_LIVE_DENY_ENTRIES) {
      throw new Refusal('DENY_LIST_FULL', { max: MAX_LIVE_DENY_ENTRIES });
    }
    await tx.accounts.putDenyEntries(entries, now);
  });
  const hostFps = new Set(entries.filter((e) => e.kind === 'host_fp').map((e) => e.value));
  const clientIds = new Set(entries.filter((e) => e.kind === 'client_id').map((e) => e.value));
  return { ok: true, entries: entries.length, sessions_dropped: hosted.sessions.drop(hostFps, clientIds) };
}
