// Encryption-key ads (protocol.md §3.8): POST /v2/relay/enc-key {ad, sig} and the 0.5.x form
// POST /v1/relay/enc-key {enc_pub, sig}, both → 200 {ok:true}; lookups GET /v2/relay/enc-key?pubkey=
// and GET /v1/relay/enc-key?host= → {host, host_pubkey, enc_pub, sig?, ad?, ad_sig?} or 404 UNKNOWN_HOST.
import { isEncPublicKey, isPublicKey } from '../keys.ts';
import { checkEncAdV2, verifyEncAdV1, type EncAdV2 } from '../records/enc-ad.ts';
import { isPlainObject } from '../validate.ts';
import { HOP_LEGACY, readOk, readReply, type LegacyCodes, type Reply, type WireAnswer } from './answer.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

export interface EncAdV2Request {
  ad: EncAdV2;
  sig: string;
  iatMs: number;
  expMs: number;
}

export interface EncAdV1Request {
  encPub: string;
  sig: string;
}

/** A lookup answer: the signed v2 ad, or the legacy v1 form `{host, host_pubkey, enc_pub, sig}` (the host checks either against its pin). */
export type EncAdLookup = { version: 2; ad: unknown; adSig: unknown } | { version: 1; answer: Record<string, unknown> };

/** A relay that names no code: 404 to a v2 ad is a relay that predates them (protocol.md §3.8). */
const PUBLISH_LEGACY: LegacyCodes = { ...HOP_LEGACY, 404: 'NOT_FOUND' };
const LOOKUP_LEGACY: LegacyCodes = { ...HOP_LEGACY, 404: 'UNKNOWN_HOST' };

const adRefused = (reason: string): Refusal => new Refusal('ENC_AD_REFUSED', { reason });

export function parseEncAdV2Request(body: unknown, callerPubkey: string, nowMs: number): Parsed<EncAdV2Request> {
  const { ad, sig } = isPlainObject(body) ? body : {};
  const checked = checkEncAdV2(ad, sig, nowMs, callerPubkey);
  if (!checked.ok) return refused(adRefused(checked.reason));
  return parsed({ ad: checked.ad, sig: sig as string, iatMs: checked.iatMs, expMs: checked.expMs });
}

/** A v1 ad the relay will not store is refused with 410 (protocol.md §3.8: a 400 makes AgentMBX hosts republish every tick). */
export function parseEncAdV1Request(body: unknown, caller: { hostName: string; hostPubkey: string }): Parsed<EncAdV1Request> {
  const { enc_pub: encPub, sig } = isPlainObject(body) ? body : {};
  if (!isEncPublicKey(encPub)) return refused(new Refusal('ENC_AD_V1_RETIRED', { reason: 'malformed' }));
  if (!verifyEncAdV1(caller.hostName, encPub, sig, caller.hostPubkey))
    return refused(new Refusal('ENC_AD_V1_RETIRED', { reason: 'not signed by this host under its enrolled name' }));
  return parsed({ encPub, sig: sig as string });
}

/** `?pubkey=`: a base64 host key; a `+` may arrive decoded as a space (protocol.md §7.12). */
export function parseLookupByKey(pubkey: string | undefined): Parsed<string> {
  const key = pubkey?.replaceAll(' ', '+');
  return isPublicKey(key) ? parsed(key) : refused(new Refusal('BAD_LOOKUP', { field: 'pubkey', shape: 'a base64 host key' }));
}

/** `?host=`: a v1 host name, required. */
export function parseLookupByName(host: string | undefined): Parsed<string> {
  return host === undefined || host === '' ? refused(new Refusal('BAD_LOOKUP', { field: 'host', shape: 'a host name' })) : parsed(host);
}

export function readEncAdPublishAnswer(answer: WireAnswer): Reply<{ ok: true }> {
  return readReply(answer, readOk, PUBLISH_LEGACY);
}

/** A 0.5.x relay's answer to the v1 ad: any 200 took it. */
export function readEncAdV1PublishAnswer(answer: WireAnswer): Reply<{ ok: true }> {
  return readReply(answer, () => ({ ok: true }));
}

function readLookup(body: Record<string, unknown>): EncAdLookup {
  if (body['ad'] !== undefined) return { version: 2, ad: body['ad'], adSig: body['ad_sig'] };
  return { version: 1, answer: body };
}

export function readEncAdLookupAnswer(answer: WireAnswer): Reply<EncAdLookup> {
  return readReply(answer, readLookup, LOOKUP_LEGACY);
}
