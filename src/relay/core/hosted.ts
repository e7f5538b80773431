// The rules only a hosted relay (enrolment_authority "account-token", design §8) adds to the core:
// the cloud key binding made at enrolment, the session rule every hop must pass, and the
// revocation deny-list an operator pushes (docs/hosted-relay.md).
import { decodeJwt } from 'jose';
import { fingerprint, parseFingerprintInput } from '../../protocol/fingerprint.ts';
import { sha256Hex } from '../../protocol/hash.ts';
import { MAX_CLAIM_CHARS, MAX_TOKEN_LIFETIME_S, type AccountTokenAuthority } from '../authority/account-token.ts';
import type { CloudKeyBinding } from '../authority/enrolment-authority.ts';
import { SessionCache } from '../authority/session-cache.ts';
import type { DenyEntry } from '../store/accounts.ts';
import type { Enrolment, RelayTransactor } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import { badRequest, RelayError } from './relay-error.ts';

/** The scope an operator token needs for POST /v2/relay/admin/deny. */
export const DENY_SCOPE = 'relay:deny';
/** Entries one deny request may carry. */
export const MAX_DENY_ENTRIES_PER_REQUEST = 1000;
/** Live deny-list entries a relay keeps; a request that would pass it answers 503. */
export const MAX_LIVE_DENY_ENTRIES = 100_000;
/** Body cap of the deny route (1000 entries of a few hundred bytes). */
export const DENY_BODY_MAX_BYTES = 512 * 1024;
/** Longest `reason` of a deny entry. */
export const MAX_DENY_REASON_CHARS = 500;
/** Latest `until` accepted: ten years ahead. */
export const MAX_DENY_MS = 3650 * 86_400_000;

export class HostedRelay {
  readonly authority: AccountTokenAuthority;
  readonly sessions = new SessionCache();
  constructor(authority: AccountTokenAuthority) {
    this.authority = authority;
  }
}

const denied = (entry: DenyEntry): RelayError =>
  new RelayError(403, `access to this relay was revoked until ${new Date(entry.untilMs).toISOString()}: ${entry.reason}`, 'DENIED');

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
    if (other !== null && other.revokedAt === null) throw new RelayError(403, 'enrolment denied: this cloud key is certified by another live host key', 'DENIED');
  }
  await tx.accounts.bindCloudKey(hostPubkey, binding.jkt, nowMs);
}

/** The token of `authorization: Bearer <token>`, or null. */
function bearer(authorization: string | undefined): string | null {
  const match = /^Bearer +(\S+)\s*$/i.exec(authorization ?? '');
  return match?.[1] ?? null;
}

const tokenRefused = (reason: string): RelayError => new RelayError(401, `access token refused: ${reason}`, 'TOKEN_INVALID');

/**
 * The session rule of a hosted relay: a signed hop is accepted only with `authorization: Bearer`
 * carrying a valid, unexpired token bound to the caller's certified cloud key, while neither the
 * caller's fingerprint nor the token's client_id is on the deny-list. Returns the refusal, or null.
 */
export async function sessionRefusal(ctx: CoreContext, hosted: HostedRelay, caller: Enrolment, authorization: string | undefined): Promise<RelayError | null> {
  const token = bearer(authorization);
  if (token === null) return new RelayError(401, 'this relay needs "authorization: Bearer <access token>" on every signed call', 'TOKEN_REQUIRED');
  const now = ctx.nowMs();
  const hostFp = fingerprint(caller.hostPubkey);
  const tokenHash = sha256Hex(token);
  let claims: { jti?: unknown; exp?: unknown };
  try {
    claims = decodeJwt(token);
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
        ? new RelayError(503, `cannot check the access token now: ${verified.reason}`, 'AUTHORITY_UNAVAILABLE')
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

function parseDenyEntries(body: unknown, nowMs: number): DenyEntry[] {
  const entries = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['entries'] : undefined;
  if (!Array.isArray(entries) || entries.length === 0) throw badRequest('body must be {entries:[{host_fp?, client_id?, reason, until}, …]}');
  if (entries.length > MAX_DENY_ENTRIES_PER_REQUEST) throw badRequest(`at most ${MAX_DENY_ENTRIES_PER_REQUEST} entries per request`);
  const out: DenyEntry[] = [];
  entries.forEach((raw: unknown, i) => {
    const entry = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const where = `entries[${i}]`;
    const hostFpText = entry['host_fp'];
    const clientId = entry['client_id'];
    const hostFp = typeof hostFpText === 'string' ? parseFingerprintInput(hostFpText) : null;
    if (hostFpText !== undefined && hostFp === null) throw badRequest(`${where}.host_fp is not a host fingerprint`);
    if (clientId !== undefined && (typeof clientId !== 'string' || clientId === '' || clientId.length > MAX_CLAIM_CHARS)) throw badRequest(`${where}.client_id must be a non-empty string`);
    if (hostFp === null && clientId === undefined) throw badRequest(`${where} needs host_fp or client_id`);
    const reason = entry['reason'];
    if (typeof reason !== 'string' || reason.trim() === '' || reason.length > MAX_DENY_REASON_CHARS) throw badRequest(`${where}.reason must be a sentence of at most ${MAX_DENY_REASON_CHARS} characters`);
    const until = typeof entry['until'] === 'string' ? Date.parse(entry['until']) : NaN;
    if (!Number.isFinite(until)) throw badRequest(`${where}.until must be an ISO-8601 time`);
    if (until < nowMs + MAX_TOKEN_LIFETIME_S * 1000) throw badRequest(`${where}.until must be at least ${MAX_TOKEN_LIFETIME_S / 60} minutes ahead (the longest token lifetime)`);
    if (until > nowMs + MAX_DENY_MS) throw badRequest(`${where}.until is more than ten years ahead`);
    const common = { reason, untilMs: until, addedAt: nowMs };
    if (hostFp !== null) out.push({ kind: 'host_fp', value: hostFp, ...common });
    if (typeof clientId === 'string') out.push({ kind: 'client_id', value: clientId, ...common });
  });
  return out;
}

/**
 * POST /v2/relay/admin/deny: an operator token (this issuer, this relay, scope relay:deny) adds
 * durable entries; the sessions they name are dropped at once.
 */
export async function addDenyEntries(ctx: CoreContext, hosted: HostedRelay, authorization: string | undefined, body: unknown): Promise<{ ok: true; entries: number; sessions_dropped: number }> {
  const token = bearer(authorization);
  if (token === null) throw new RelayError(401, 'this route needs "authorization: Bearer <operator token>"', 'TOKEN_REQUIRED');
  const verified = await hosted.authority.verifyAdminToken(token, DENY_SCOPE);
  if (!verified.ok) {
    if (verified.unavailable === true) throw new RelayError(503, `cannot check the operator token now: ${verified.reason}`, 'AUTHORITY_UNAVAILABLE');
    throw new RelayError(401, `operator token refused: ${verified.reason}`, 'TOKEN_INVALID');
  }
  const now = ctx.nowMs();
  const entries = parseDenyEntries(body, now);
  await ctx.store.transaction(async (tx) => {
    if ((await tx.accounts.countLiveDenyEntries(now)) + entries.length > MAX_LIVE_DENY_ENTRIES) {
      throw new RelayError(503, `the deny-list is full (${MAX_LIVE_DENY_ENTRIES} live entries)`);
    }
    await tx.accounts.putDenyEntries(entries, now);
  });
  const hostFps = new Set(entries.filter((e) => e.kind === 'host_fp').map((e) => e.value));
  const clientIds = new Set(entries.filter((e) => e.kind === 'client_id').map((e) => e.value));
  return { ok: true, entries: entries.length, sessions_dropped: hosted.sessions.drop(hostFps, clientIds) };
}
