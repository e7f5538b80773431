// Host key rotation records (T030, protocol §3.7): self-proving, as both the old and the new key
// sign canonical(rec).
import { isEncPublicKey, isPublicKey, type SigningKey } from '../keys.ts';
import { RELAY_HOST_RE } from '../names.ts';
import { hasExactKeys, isIsoTime, isPlainObject, verifyCanonical, signCanonical } from '../validate.ts';

export type HostRotationRecord = { v: 1; type: 'host-rotation'; host: string; old_pub: string; new_pub: string; new_enc_pub: string; iat: string };
export type HostRotation = { rec: HostRotationRecord; old_sig: string; new_sig: string };
export type RotationCheck = { ok: true; rotation: HostRotation } | { ok: false; reason: string };

const REC_KEYS = ['v', 'type', 'host', 'old_pub', 'new_pub', 'new_enc_pub', 'iat'] as const;

/** The item id of a rotation record in an outbox or a LAN batch: one per new key. */
export function rotationItemId(rec: Pick<HostRotationRecord, 'new_pub'>): string {
  return `rotation:${rec.new_pub}`;
}

/** Signs `rec` with both keys; throws when the keys are not the record's old and new keys. */
export function signRotation(rec: HostRotationRecord, oldKey: SigningKey, newKey: SigningKey): HostRotation {
  if (oldKey.publicKey !== rec.old_pub || newKey.publicKey !== rec.new_pub) throw new Error('rotation keys do not match the record');
  return { rec, old_sig: signCanonical(rec, oldKey), new_sig: signCanonical(rec, newKey) };
}

/** Checks the shape, the keys, that the key changes, and both signatures. */
export function checkRotation(x: unknown): RotationCheck {
  if (!isPlainObject(x) || !hasExactKeys(x, ['rec', 'old_sig', 'new_sig'])) return { ok: false, reason: 'malformed rotation' };
  const rec = x.rec;
  if (!isPlainObject(rec) || !hasExactKeys(rec, REC_KEYS) || rec.v !== 1 || rec.type !== 'host-rotation') {
    return { ok: false, reason: 'malformed rotation record' };
  }
  if (typeof rec.host !== 'string' || !RELAY_HOST_RE.test(rec.host)) return { ok: false, reason: 'bad host name' };
  if (!isPublicKey(rec.old_pub)) return { ok: false, reason: 'bad old key' };
  if (!isPublicKey(rec.new_pub)) return { ok: false, reason: 'bad new key' };
  if (!isEncPublicKey(rec.new_enc_pub)) return { ok: false, reason: 'bad new enc key' };
  if (!isIsoTime(rec.iat)) return { ok: false, reason: 'bad iat' };
  if (rec.old_pub === rec.new_pub) return { ok: false, reason: 'old and new key are the same' };
  if (!verifyCanonical(rec.old_pub, rec, x.old_sig)) return { ok: false, reason: 'bad old key signature' };
  if (!verifyCanonical(rec.new_pub, rec, x.new_sig)) return { ok: false, reason: 'bad new key signature' };
  return { ok: true, rotation: x as HostRotation };
}
