// The host's session with its pinned relay (design §1, §8): the relay key is checked on every
// info, enrolment is a cache keyed by (relay, relay_pubkey, epoch, host_pubkey) checked against
// the signed `you` of info, and redone after a 401 or an epoch change, with backoff while the relay
// keeps refusing. The enc-ad (30 days, refreshed daily; the v1 ad on a relay that predates v2 ads)
// and the sender allowlist are kept published.
// A hosted relay also gets an account token with every signed call and a proof at enrolment
// (access.ts).
import { sha256Hex } from '../../protocol/hash.ts';
import { HOP_MAX_SKEW_MS } from '../../protocol/relay-hop.ts';
import { ENC_AD_PUBLISH_LIFETIME_MS, signEncAdV1, signEncAdV2, type EncAdV2 } from '../../protocol/records/enc-ad.ts';
import { signSenderList, type SenderListRecord } from '../../protocol/records/sender-list.ts';
import type { RefusedReply } from '../../protocol/relay-api/answer.ts';
import { readEnrolAnswer } from '../../protocol/relay-api/enrolment.ts';
import { readEncAdPublishAnswer, readEncAdV1PublishAnswer } from '../../protocol/relay-api/enc-key.ts';
import { readInfoAnswer, type InfoAnswer } from '../../protocol/relay-api/info.ts';
import type { RefusalCode } from '../../protocol/relay-api/refusals.ts';
import { readSenderListAnswer } from '../../protocol/relay-api/senders.ts';
import { backoffMs } from '../core/outbox-pace.ts';
import { isoTime, type HostNode } from '../core/node.ts';
import type { RelayRow, RelayState } from '../store/relay-tables.ts';
import { dropRelayToken, relayAccess, TokenCommandError, type RelayAccess } from './access.ts';
import { RelayApi, RelayUnreachableError, type RelayAnswer } from './api.ts';
import { syncOwnRotation } from './rotation-sync.ts';

/** How often the enc-ad is re-published (it lives ENC_AD_PUBLISH_LIFETIME_MS). */
export const ENC_AD_REFRESH_MS = 24 * 60 * 60 * 1000;
/** The relay's Date header this far from our clock explains a refused hop as clock skew. */
export const CLOCK_SKEW_MAX_MS = HOP_MAX_SKEW_MS - 60_000;
/** One relay call may take this long before it counts as failed. */
export const RELAY_CALL_TIMEOUT_MS = 15_000;
/** Longest wait between probes of a relay that gave no answer. */
export const UNREACHABLE_RETRY_MAX_MS = 60_000;
/** Retention assumed until the relay's info said otherwise (the reference deployment's 14 days). */
export const DEFAULT_RETENTION_MS = 14 * 24 * 60 * 60 * 1000;

/** A relay ready for pushes and pulls this tick. */
export interface RelaySession {
  relay: RelayRow;
  api: RelayApi;
}

export type SessionResult = { ok: true; session: RelaySession } | { ok: false; state: RelayState | 'unset'; reason: string };

/** A client of the relay at `url` speaking as this host; with `access`, signed calls carry its token. */
export function relayApiFor(node: HostNode, url: string, timeoutMs = RELAY_CALL_TIMEOUT_MS, access: RelayAccess | null = null): RelayApi {
  return new RelayApi({
    baseUrl: url,
    hostName: node.config.host,
    key: node.keys.hostKey,
    nowMs: node.nowMs,
    timeoutMs,
    ...(access === null ? {} : { bearer: access.bearer }),
  });
}

function sessionKey(relay: RelayRow, epoch: string, hostPub: string): string {
  return `${relay.url}|${relay.relay_pubkey}|${epoch}|${hostPub}`;
}

/** The clock difference the relay's Date header shows (relay minus us), or null without one. */
export function clockSkewMs(answer: RelayAnswer, nowMs: number): number | null {
  const relayMs = answer.date === null ? NaN : Date.parse(answer.date);
  return Number.isFinite(relayMs) ? relayMs - nowMs : null;
}

/** A refused call, with the answer it came in (its Date header). */
interface Refused {
  answer: RelayAnswer;
  refusal: RefusedReply;
}

/** A refused call explained: denied (DENIED), unreachable (AUTHORITY_UNAVAILABLE), clock-skew when the Date header shows it, else `fallback`. */
function refusalState({ answer, refusal }: Refused, nowMs: number, fallback: RelayState): { state: RelayState; reason: string } {
  if (refusal.code === 'DENIED') return { state: 'denied', reason: refusal.error };
  if (refusal.code === 'AUTHORITY_UNAVAILABLE') return { state: 'unreachable', reason: refusal.error };
  const skew = clockSkewMs(answer, nowMs);
  if (skew !== null && Math.abs(skew) > CLOCK_SKEW_MAX_MS) {
    return { state: 'clock-skew', reason: `the relay's clock is ${Math.round(skew / 1000)} s from ours: fix this machine's time` };
  }
  return { state: fallback, reason: refusal.error };
}

function fail(node: HostNode, relay: RelayRow, state: RelayState, reason: string): SessionResult {
  // An unreachable relay is probed at least once a minute: mail should move soon after it is back.
  const wait = state === 'unreachable' ? Math.min(backoffMs(relay.failures), UNREACHABLE_RETRY_MAX_MS) : backoffMs(relay.failures);
  node.store.relay.update({ state, detail: reason, failures: relay.failures + 1, retry_at: node.nowMs() + wait });
  return { ok: false, state, reason };
}

/** A call that got no answer: the token command failed (token-failed), or the relay is out of reach. */
function noAnswer(node: HostNode, relay: RelayRow, err: unknown): SessionResult {
  if (err instanceof TokenCommandError) return fail(node, relay, 'token-failed', err.message);
  return fail(node, relay, 'unreachable', err instanceof RelayUnreachableError ? err.message : `cannot reach ${relay.url}: ${String(err)}`);
}

/**
 * A push, pull or ack of a ready session failed with `err`: when the relay gave no answer it is
 * unreachable (the error names the cause). The session is kept (nothing says we must enrol again);
 * the next tick probes with info.
 */
export function noteIfUnreachable(node: HostNode, err: unknown): void {
  const relay = node.store.relay.get();
  if (relay !== undefined && err instanceof RelayUnreachableError) fail(node, relay, 'unreachable', err.message);
}

/**
 * The relay changed its store generation (new epoch, or a rewind within one): the receive position
 * starts over (a new epoch has its own position; a rewind resets it), relay-accepted rows are pushed
 * again, and the session is redone. One transaction.
 */
export function noteRelayReset(node: HostNode, epoch: string, why: 'epoch' | 'rewind'): void {
  const { store } = node;
  const relay = store.relay.get();
  if (relay === undefined) return;
  const now = node.nowMs();
  store.transaction(() => {
    if (why === 'rewind') store.relay.setReceivedThrough(relay.url, epoch, 0, now);
    // a new store generation may be an upgraded relay: try the v2 enc-key ad again
    store.relay.update({ epoch, epoch_changed_at: now, session: null, enc_ad_at: null, enc_ad_v1_only: 0, senders_published: null });
    store.outbox.requeueRelayAccepted(now);
  });
}

/** Refusals of who we are: the session is redone (enrol again) on the next tick. */
const SESSION_REFUSALS: ReadonlySet<string> = new Set<RefusalCode>(['BAD_HOP', 'TOKEN_REQUIRED', 'TOKEN_INVALID', 'DENIED']);
/** Refusals of the account token: it is dropped, so the token command runs again. */
const TOKEN_REFUSALS: ReadonlySet<string> = new Set<RefusalCode>(['TOKEN_REQUIRED', 'TOKEN_INVALID']);

/**
 * A signed call the relay refused for who we are (a bad hop, a refused token, DENIED): enrol again
 * on the next tick. A refused account token is dropped too, so the token command runs again; that is
 * also how a key rotation on a hosted relay ends ("enrol again"). Other refusals: nothing.
 */
export function forgetSession(node: HostNode, refusal: RefusedReply): void {
  if (SESSION_REFUSALS.has(refusal.code)) node.store.relay.update({ session: null });
  if (TOKEN_REFUSALS.has(refusal.code)) dropRelayToken(node);
}

/**
 * Makes the relay usable for this tick, or says why not. Calls info (signed) only when the cached
 * session does not match.
 */
export async function ensureSession(node: HostNode): Promise<SessionResult> {
  const relay = node.store.relay.get();
  if (relay === undefined) return { ok: false, state: 'unset', reason: 'no relay set (agentmbx relay set <url>)' };
  if (relay.seen_pubkey !== null) {
    return {
      ok: false,
      state: 'key-mismatch',
      reason: `the relay now presents another key: confirm it with agentmbx relay set ${relay.url} --key <fingerprint>`,
    };
  }
  if (relay.retry_at > node.nowMs()) return { ok: false, state: relay.state, reason: relay.detail ?? 'waiting before trying the relay again' };
  const access = relayAccess(node, relay);
  const api = relayApiFor(node, relay.url, RELAY_CALL_TIMEOUT_MS, access);
  try {
    // a fresh token before anything else: this is where it is refreshed ahead of its expiry
    await access?.bearer();
    if (relay.state === 'ok' && relay.epoch !== null && relay.session === sessionKey(relay, relay.epoch, node.keys.hostKey.publicKey)) {
      return await maintain(node, { relay, api });
    }
    return await openSession(node, api, access);
  } catch (err) {
    return noAnswer(node, node.store.relay.get() ?? relay, err);
  }
}

/** Reads the relay's info (signed), enrols when it does not know this key, and marks the session ok. */
async function openSession(node: HostNode, api: RelayApi, access: RelayAccess | null): Promise<SessionResult> {
  const { store } = node;
  await syncOwnRotation(node, api);
  let relay = store.relay.get();
  if (relay === undefined) return { ok: false, state: 'unset', reason: 'the relay was unset meanwhile' };
  const info = readInfoAnswer(await api.info());
  if (!info.ok) return fail(node, relay, 'unreachable', `${relay.url} is not answering as a v2 relay (${info.error})`);
  if (info.value.relay_pubkey !== relay.relay_pubkey) {
    store.relay.update({ seen_pubkey: info.value.relay_pubkey, state: 'key-mismatch', detail: 'the relay presents another key than the pinned one' });
    return { ok: false, state: 'key-mismatch', reason: 'the relay presents another key than the pinned one: relay use stopped' };
  }
  relay = recordInfo(node, relay, info.value);
  const hostPub = node.keys.hostKey.publicKey;
  // Enrolled means the relay's signed answer names this very key (G13).
  let you = info.value.you;
  if (you?.pubkey !== hostPub) {
    const answer = await api.enrol('', access?.proof);
    const refusal = readEnrolAnswer(answer);
    if (!refusal.ok) return enrolRefused(node, relay, access, { answer, refusal });
    // the relay's signed `you` now: whether it holds our ad, and whether it knows v2 ads at all
    const again = readInfoAnswer(await api.info());
    you = again.ok ? again.value.you : undefined;
  }
  store.relay.update({
    state: 'ok',
    detail: null,
    failures: 0,
    retry_at: 0,
    session: sessionKey(relay, info.value.epoch, hostPub),
    session_host_pubkey: hostPub,
    // an ad the relay does not hold (a restore, a wipe) is published again now
    ...(you?.enc_ad?.enc_pub === node.keys.enc.publicKey ? {} : { enc_ad_at: null }),
  });
  // the relay answers again after failures: rows that backed off meanwhile go now
  if (relay.failures > 0) store.outbox.makeAllDueNow(node.nowMs());
  // A relay whose signed `you` has an enc_ad member knows v2 ads: a 404 from it is no reason to fall back.
  return maintain(node, { relay: store.relay.get() ?? relay, api }, you !== undefined && !('enc_ad' in you));
}

/** Keeps what the relay's info says: a new epoch starts the position over; the limits a host obeys. */
function recordInfo(node: HostNode, relay: RelayRow, info: InfoAnswer): RelayRow {
  if (relay.epoch !== null && relay.epoch !== info.epoch) noteRelayReset(node, info.epoch, 'epoch');
  const { retention_days: retentionDays, max_batch: maxBatch, max_pull: maxPull, max_item_bytes: maxItemBytes } = info.limits;
  node.store.relay.update({
    epoch: info.epoch,
    retention_ms: retentionDays === undefined ? null : retentionDays * 86_400_000,
    max_batch: maxBatch ?? null,
    max_pull: maxPull ?? null,
    max_item_bytes: maxItemBytes ?? null,
  });
  return node.store.relay.get() ?? relay;
}

/** Enrolment refused: a refused proof is not offered again (the next try runs the token command anew). */
function enrolRefused(node: HostNode, relay: RelayRow, access: RelayAccess | null, refused: Refused): SessionResult {
  if (access !== null) dropRelayToken(node);
  const why = refusalState(refused, node.nowMs(), 'enrol-failed');
  const hint =
    why.state === 'denied' && access === null
      ? `; this relay enrols hosts with account tokens: run agentmbx relay set ${relay.url} --token-command "<cmd>"`
      : '';
  return fail(node, relay, why.state, `enrolment refused: ${why.reason}${hint}`);
}

/**
 * Publishes this host's enc-key ad: the signed v2 ad, or (with `mayFallBack`) the v1 ad to a relay
 * that predates v2 ads (it answers 404 to them, protocol §3.8); such a relay is remembered, so
 * refreshes go straight to v1. Returns the refusal, or null once the relay took the ad.
 */
async function publishOwnEncAd(node: HostNode, { relay, api }: RelaySession, now: number, mayFallBack: boolean): Promise<Refused | null> {
  const { hostKey, enc } = node.keys;
  if (relay.enc_ad_v1_only === 0) {
    const ad: EncAdV2 = {
      v: 2,
      type: 'enc-ad',
      host: node.config.host,
      host_pubkey: hostKey.publicKey,
      enc_pub: enc.publicKey,
      iat: isoTime(now),
      exp: isoTime(now + ENC_AD_PUBLISH_LIFETIME_MS),
    };
    const answer = await api.publishEncAd(ad, signEncAdV2(ad, hostKey));
    const refusal = readEncAdPublishAnswer(answer);
    if (refusal.ok) return null;
    forgetSession(node, refusal);
    if (refusal.code !== 'NOT_FOUND' || !mayFallBack) return { answer, refusal };
  }
  const answer = await api.publishEncAdV1(enc.publicKey, signEncAdV1(node.config.host, enc.publicKey, hostKey));
  const refusal = readEncAdV1PublishAnswer(answer);
  // 404/410: the relay keeps no v1 ads either (protocol §3.8). Nothing more to publish until the
  // daily refresh, which tries v2 first again: never a retry every tick.
  if (!refusal.ok && (answer.status === 404 || answer.status === 410)) return null;
  if (!refusal.ok) {
    forgetSession(node, refusal);
    return { answer, refusal };
  }
  node.store.relay.update({ enc_ad_v1_only: 1 });
  return null;
}

/**
 * Keeps the enc-ad and the sender allowlist published; a refused hop drops the session. `mayFallBack`:
 * the info just read allows the v1 ad (a cached session without info does not).
 */
async function maintain(node: HostNode, session: RelaySession, mayFallBack = false): Promise<SessionResult> {
  const { store } = node;
  const now = node.nowMs();
  const { relay, api } = session;
  const encPub = node.keys.enc.publicKey;
  if (relay.enc_ad_at === null || relay.enc_ad_pub !== encPub || now - relay.enc_ad_at >= ENC_AD_REFRESH_MS) {
    const refused = await publishOwnEncAd(node, session, now, mayFallBack);
    if (refused !== null) {
      const why = refusalState(refused, now, 'enc-ad-failed');
      return fail(node, relay, why.state, `enc-key ad not published: ${why.reason}`);
    }
    store.relay.update({ enc_ad_at: now, enc_ad_pub: encPub });
  }
  const senders = store.peers
    .list()
    .map((p) => p.host_pubkey)
    .sort();
  const published = sha256Hex(`${relay.epoch ?? ''}\n${node.keys.hostKey.publicKey}\n${senders.join('\n')}`);
  if (relay.senders_published !== published) {
    const list: SenderListRecord = { v: 1, type: 'relay-senders', host_pubkey: node.keys.hostKey.publicKey, senders, iat: isoTime(now) };
    const answer = await api.publishSenders(list, signSenderList(list, node.keys.hostKey));
    const refusal = readSenderListAnswer(answer);
    if (refusal.ok) store.relay.update({ senders_published: published });
    else {
      forgetSession(node, refusal);
      // a list at least as new is there already (published this very millisecond): try again later
      if (refusal.code !== 'SENDER_LIST_NOT_NEWER') {
        const why = refusalState({ answer, refusal }, now, 'unreachable');
        return fail(node, relay, why.state, `sender allowlist not published: ${why.reason}`);
      }
    }
  }
  return { ok: true, session: { relay: store.relay.get() ?? relay, api } };
}
