// Key rotation (protocol.md §3.7): POST /v2/relay/rotate {rotation} → 200 {moved}. No hop: the
// record, signed by both keys, proves itself.
import { checkRotation, type HostRotation } from '../records/rotation.ts';
import { isPlainObject } from '../validate.ts';
import { readReply, type LegacyCodes, type Reply, type WireAnswer } from './answer.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

/** A relay that names no code: 404 is an old key not enrolled there (protocol.md §3.7). */
const ROTATION_LEGACY: LegacyCodes = { 404: 'ROTATION_UNKNOWN_KEY' };

export function parseRotationRequest(body: unknown): Parsed<HostRotation> {
  const checked = checkRotation(isPlainObject(body) ? body['rotation'] : undefined);
  return checked.ok ? parsed(checked.rotation) : refused(new Refusal('BAD_ROTATION', { reason: checked.reason }));
}

export function readRotationAnswer(answer: WireAnswer): Reply<{ moved: number }> {
  return readReply(answer, (body) => (typeof body['moved'] === 'number' ? { moved: body['moved'] } : null), ROTATION_LEGACY);
}
