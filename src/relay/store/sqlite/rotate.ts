// Key rotation (design §2 "Rotation", protocol §3.7) as one set of statements inside the caller's
// transaction. The caller checked the rotation record and that the new key is not revoked.
import type { SQLTagStore } from 'node:sqlite';
import type { RotationResult } from '../relay-store.ts';
import { assertInteger } from './columns.ts';
import { getEnrolment, putEnrolment } from './enrolments.ts';
import { moveSenderList, replaceSenderInLists } from './host-records.ts';
import { moveQueue } from './items.ts';

export function rotate(sql: SQLTagStore, oldKey: string, newKey: string, nowMs: number): RotationResult {
  assertInteger(nowMs, 'nowMs');
  if (oldKey === newKey) throw new TypeError('a rotation needs two different keys');
  const moved = moveQueue(sql, oldKey, newKey, nowMs);

  // Revoke first: the new row may take the old one's name in the same account (unique among live keys).
  const old = getEnrolment(sql, oldKey);
  if (old !== null && old.revokedAt === null) putEnrolment(sql, { ...old, revokedAt: nowMs });
  if (old !== null) {
    // The name and account move to the new key (both keys signed the record), also when the new
    // key enrolled on its own before the rotation reached the relay.
    const existing = getEnrolment(sql, newKey);
    putEnrolment(sql, { ...old, hostPubkey: newKey, enrolledAt: existing?.enrolledAt ?? nowMs, revokedAt: null });
  }

  moveSenderList(sql, oldKey, newKey);
  replaceSenderInLists(sql, oldKey, newKey);
  return { moved };
}
