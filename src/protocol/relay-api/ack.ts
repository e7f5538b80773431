// Ack (protocol.md §3.5, §7.7): POST /v2/relay/ack {epoch, through} → 200 {acked_through, deleted,
// head_seq}. The epoch is judged first: missing or stale is 409 EPOCH (the core adds `head_seq`);
// then `through` must be a non-negative safe integer (BAD_ACK; past the head is BAD_ACK too).
import { isPlainObject } from '../validate.ts';
import { readReply, type Reply, type WireAnswer } from './answer.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

export interface AckAnswer {
  acked_through: number;
  deleted: number;
  head_seq: number;
}

export function parseAckRequest(body: unknown, currentEpoch: string): Parsed<{ through: number }> {
  const fields = isPlainObject(body) ? body : {};
  const { epoch, through } = fields;
  if (epoch !== currentEpoch) {
    const named = epoch !== undefined && epoch !== null && epoch !== '';
    return refused(new Refusal('EPOCH', { why: named ? 'relay epoch changed' : 'an ack must name the relay epoch' }, { epoch: currentEpoch }));
  }
  if (typeof through !== 'number' || !Number.isSafeInteger(through) || through < 0) {
    return refused(new Refusal('BAD_ACK', { reason: 'through must be a non-negative integer' }));
  }
  return parsed({ through });
}

export const ackBeyondHead = (): Refusal => new Refusal('BAD_ACK', { reason: 'ack beyond the last allocated seq: treat as an epoch change' });

function readAck(body: Record<string, unknown>): AckAnswer | null {
  const { acked_through: ackedThrough, deleted, head_seq: headSeq } = body;
  if (typeof ackedThrough !== 'number' || typeof headSeq !== 'number') return null;
  return { acked_through: ackedThrough, deleted: typeof deleted === 'number' ? deleted : 0, head_seq: headSeq };
}

export function readAckAnswer(answer: WireAnswer): Reply<AckAnswer> {
  return readReply(answer, readAck);
}
