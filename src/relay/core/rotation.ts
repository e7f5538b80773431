// Host key rotation (design §2 "Rotation", protocol.md §3.7): the record signed by both keys
// proves itself; rotateKey (store/rules/) moves name, account, queue, dedup rows and allowlists in one transaction.
import type { HostRotation } from '../../protocol/records/rotation.ts';
import { Refusal } from '../../protocol/relay-api/refusals.ts';
import { rotateKey } from '../store/rules/rotation.ts';
import type { CoreContext } from './context.ts';

export async function rotate(ctx: CoreContext, rotation: HostRotation): Promise<{ moved: number }> {
  const { old_pub: oldPub, new_pub: newPub } = rotation.rec;
  const answer = await ctx.store.transaction(async (tx) => {
    const old = await tx.enrolments.get(oldPub);
    const next = await tx.enrolments.get(newPub);
    if (next?.revokedAt != null) throw new Refusal('ROTATION_KEY_REVOKED');
    if (old === null) throw new Refusal('ROTATION_UNKNOWN_KEY');
    // A retry after a lost answer finds the rotation done: answer it again, moving nothing.
    if (old.revokedAt !== null) {
      if (next !== null) return { moved: 0 };
      throw new Refusal('ROTATION_UNKNOWN_KEY');
    }
    return rotateKey(tx, oldPub, newPub, ctx.nowMs());
  });
  // the queue moved to the new key: a pull it holds already may answer
  if (answer.moved > 0) ctx.pullWakes.committed([newPub]);
  return answer;
}
