// The sender allowlist (protocol.md §3.6): POST /v2/relay/senders {list, sig} → 200 {ok:true}.
import { checkSenderList, type SenderListRecord } from '../records/sender-list.ts';
import { isPlainObject } from '../validate.ts';
import { HOP_LEGACY, readOk, readReply, type LegacyCodes, type Reply, type WireAnswer } from './answer.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

export interface SenderListRequest {
  list: SenderListRecord;
  iatMs: number;
  sig: string;
}

/** A relay that names no code: 409 is a list at least as new already stored (protocol.md §3.6). */
const SENDERS_LEGACY: LegacyCodes = { ...HOP_LEGACY, 409: 'SENDER_LIST_NOT_NEWER' };

export function parseSenderListRequest(body: unknown, callerPubkey: string, nowMs: number): Parsed<SenderListRequest> {
  const fields = isPlainObject(body) ? body : {};
  const { list, sig } = fields;
  const named = isPlainObject(list) ? list['host_pubkey'] : undefined;
  if (typeof named === 'string' && named !== callerPubkey) return refused(new Refusal('SENDER_LIST_NOT_OWN'));
  const checked = checkSenderList(list, sig, nowMs);
  if (checked.ok) return parsed({ list: checked.list, iatMs: checked.iatMs, sig: sig as string });
  switch (checked.problem) {
    case 'iat in the future':
      return refused(new Refusal('SENDER_LIST_IAT_AHEAD'));
    case 'bad signature':
      return refused(new Refusal('SENDER_LIST_BAD_SIGNATURE'));
    default:
      return refused(new Refusal('SENDER_LIST_REFUSED', { reason: checked.problem }));
  }
}

export function readSenderListAnswer(answer: WireAnswer): Reply<{ ok: true }> {
  return readReply(answer, readOk, SENDERS_LEGACY);
}
