// Open enrolment challenges (protocol.md §3.2, design §2), written once over the store's
// primitives: one per key (a new one replaces it), single use, live for their life, at most
// `maxOpen` live at once. Runs inside the caller's transaction.
import type { RelayTransactor } from '../relay-store.ts';

/** Expired challenges dropped by one `open`, so that one enrolment never turns into a long delete. */
export const EXPIRED_CHALLENGES_PER_OPEN = 100;

/** Opens `challenge` for `pubkey` until `expiresAt`; false, storing nothing, when `maxOpen` are live. */
export async function openChallenge(
  tx: RelayTransactor,
  pubkey: string,
  challenge: string,
  expiresAt: number,
  nowMs: number,
  maxOpen: number,
): Promise<boolean> {
  await tx.challenges.remove(pubkey);
  await tx.challenges.deleteExpired(nowMs, EXPIRED_CHALLENGES_PER_OPEN);
  if ((await tx.challenges.countLive(nowMs)) >= maxOpen) return false;
  await tx.challenges.insert(pubkey, challenge, expiresAt);
  return true;
}

/** Removes the key's challenge and returns it when it is live at `nowMs`: a second take finds nothing. */
export async function takeChallenge(tx: RelayTransactor, pubkey: string, nowMs: number): Promise<string | null> {
  const open = await tx.challenges.remove(pubkey);
  return open !== null && open.expiresAt > nowMs ? open.challenge : null;
}
