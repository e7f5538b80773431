// Enrolment (protocol.md §3.2): POST /v1/relay/challenge {host, pubkey} → {challenge}, then
// POST /v1/relay/enrol {host, pubkey, owner_fp, sig, proof?} → {ok:true}. No hop.
import { isPublicKey } from '../keys.ts';
import { OWNER_FP_RE, RELAY_HOST_RE } from '../names.ts';
import { isPlainObject } from '../validate.ts';
import { readOk, readReply, type Reply, type WireAnswer } from './answer.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

export interface ChallengeRequest {
  host: string;
  pubkey: string;
}

export interface EnrolRequest extends ChallengeRequest {
  ownerFp: string;
  sig: string;
  /** whatever the relay's enrolment authority wants (an account token on a hosted relay) */
  proof: unknown;
}

export interface ChallengeAnswer {
  challenge: string;
}

const malformed = (field: string): Refusal => new Refusal('BAD_ENROLMENT', { field });

export function parseChallengeRequest(body: unknown): Parsed<ChallengeRequest> {
  const fields = isPlainObject(body) ? body : {};
  const { host, pubkey } = fields;
  if (typeof host !== 'string' || !RELAY_HOST_RE.test(host)) return refused(malformed('host name'));
  if (!isPublicKey(pubkey)) return refused(malformed('host public key'));
  return parsed({ host, pubkey });
}

export function parseEnrolRequest(body: unknown): Parsed<EnrolRequest> {
  const named = parseChallengeRequest(body);
  if (!named.ok) return named;
  const fields = isPlainObject(body) ? body : {};
  const { owner_fp: ownerFp, sig } = fields;
  if (typeof ownerFp !== 'string' || !OWNER_FP_RE.test(ownerFp)) return refused(malformed('owner_fp'));
  if (typeof sig !== 'string') return refused(malformed('signature'));
  return parsed({ ...named.value, ownerFp, sig, proof: fields['proof'] });
}

export function readChallengeAnswer(answer: WireAnswer): Reply<ChallengeAnswer> {
  return readReply(answer, (body) => (typeof body['challenge'] === 'string' ? { challenge: body['challenge'] } : null), {});
}

export function readEnrolAnswer(answer: WireAnswer): Reply<{ ok: true }> {
  return readReply(answer, readOk, {});
}
