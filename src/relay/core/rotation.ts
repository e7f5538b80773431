// Host key rotation (design §2 "Rotation", protocol.md §3.7): the record signed by both keys
// proves itself; rotateKey (store/rules/) moves name, account, queue, dedup rows and allowlists in one transaction.
import { checkRotation } from '../../protocol/records/rotation.ts';
import { rotateKey } from '../store/rules/rotation.ts';
import type { CoreContext } from './context.ts';
import { RelayError } from './relay-error.ts';

export async function rotate(ctx: CoreContext, body: unknown): Promise<{ moved: number }> {
  const rotation = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['rotation'] : undefined;
  const checked = checkRotation(rotation);
  if (!checked.ok) throw new RelayError(400, `rotation refused: ${checked.reason}`, 'BAD_ROTATION');
  const { old_pub: oldPub, new_pub: newPub } = checked.rotation.rec;
  return ctx.store.transaction(async (tx) => {
    const old = await tx.enrolments.get(oldPub);
    const next = await tx.enrolments.get(newPub);
    if (next?.revokedAt != null) throw new RelayError(409, 'the new key was revoked on this relay');
    if (old === null) throw new RelayError(404, 'the old key is not enrolled here');
    // A retry after a lost answer finds the rotation done: answer it again, moving nothing.
    if (old.revokedAt !== null) {
      if (next !== null) return { moved: 0 };
      throw new RelayError(404, 'the old key is not enrolled here');
    }
    return rotateKey(tx, oldPub, newPub, ctx.nowMs());
  });
}
