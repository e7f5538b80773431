// Key rotation (design §2 "Rotation", protocol §3.7), written once over the store's primitives so
// that every backend re-sequences alike. Runs inside the caller's transaction; the caller checked
// the rotation record and that the new key is not revoked. Seq allocation and usage charging stay
// inside the primitives (allocateSeqs, moveItems), where their atomicity lives.
import type { RelayTransactor, RotationResult } from '../relay-store.ts';

/**
 * Moves the old key's queue, dedup rows, usage, enrolment name/account and sender allowlist to the
 * new key; swaps the old key for the new in other targets' allowlists; revokes the old key at `nowMs`.
 */
export async function rotateKey(tx: RelayTransactor, oldKey: string, newKey: string, nowMs: number): Promise<RotationResult> {
  if (!Number.isSafeInteger(nowMs)) throw new TypeError(`nowMs must be a safe integer, got ${nowMs}`);
  if (oldKey === newKey) throw new TypeError('a rotation needs two different keys');
  const moved = await moveQueue(tx, oldKey, newKey, nowMs);

  // Revoke first: the new row may take the old one's name in the same account (unique among live keys).
  const old = await tx.enrolments.get(oldKey);
  if (old !== null && old.revokedAt === null) await tx.enrolments.put({ ...old, revokedAt: nowMs });
  if (old !== null) {
    // The name and account move to the new key (both keys signed the record), also when the new
    // key enrolled on its own before the rotation reached the relay.
    const existing = await tx.enrolments.get(newKey);
    await tx.enrolments.put({ ...old, hostPubkey: newKey, enrolledAt: existing?.enrolledAt ?? nowMs, revokedAt: null });
  }

  await tx.hostRecords.moveSenderList(oldKey, newKey);
  for (const list of await tx.hostRecords.senderListsNaming(oldKey)) {
    const senders = [...new Set(list.senders.map((key) => (key === oldKey ? newKey : key)))];
    await tx.hostRecords.putSenderList({ ...list, senders });
  }
  return { moved };
}

/**
 * Appends the old key's queue to the new key's in order, with fresh seqs from max(next_seq, nowMs)
 * (so a receiver of the new key never sees a seq it acked before); each dedup row follows its item
 * and tombstones move as they are. Where the new key already has a row for the same sender and item
 * id, the new key's row is kept and the old one dropped. Returns how many items moved.
 */
async function moveQueue(tx: RelayTransactor, oldKey: string, newKey: string, nowMs: number): Promise<number> {
  const queue = await tx.items.queueRefs(oldKey);
  if (queue.length > 0) {
    const first = await tx.items.allocateSeqs(newKey, queue.length, nowMs);
    await tx.items.moveItems(
      oldKey,
      newKey,
      queue.map((item, index) => ({ from: item.seq, to: first + index })),
    );
    await tx.items.repointDedup(
      oldKey,
      newKey,
      queue.map((item, index) => ({ ...item, seq: first + index })),
    );
  }
  await tx.items.repointDedup(oldKey, newKey);
  // what stayed behind collided with the new key's rows; its items have all moved
  await tx.items.deleteTombstonesOf(oldKey);
  return queue.length;
}
