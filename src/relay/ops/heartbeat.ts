// The heartbeat (design §5, protocol.md §6, §7.14): a running relay writes the time to its store
// every HEARTBEAT_INTERVAL_MS. At start, a heartbeat older than HEARTBEAT_STALE_MS, or more than
// HEARTBEAT_MAX_AHEAD_MS ahead of the clock, means the store may be a restored copy or came back
// from a long outage: the relay rotates the epoch (an extra rotation costs only a re-push and a
// re-pull, which dedup absorbs) and logs why.
import { setTimeout as delay } from 'node:timers/promises';
import { StoreOpenError } from '../store/errors.ts';
import type { RelayStore } from '../store/relay-store.ts';
import { rotateEpochInTx, type EpochRotation } from './epoch.ts';

/** A stored heartbeat older than this at start rotates the epoch. */
export const HEARTBEAT_STALE_MS = 600_000;
/** A stored heartbeat further ahead of the clock than this at start rotates the epoch. */
export const HEARTBEAT_MAX_AHEAD_MS = 60_000;

/** Why the stored heartbeat calls for a new epoch, or null when it is fresh (or there is none yet: a new store). */
export function staleHeartbeatReason(heartbeatAt: number | null, nowMs: number): string | null {
  if (heartbeatAt === null) return null;
  if (nowMs - heartbeatAt > HEARTBEAT_STALE_MS) return `the last heartbeat is ${Math.round((nowMs - heartbeatAt) / 1000)} s old`;
  if (heartbeatAt - nowMs > HEARTBEAT_MAX_AHEAD_MS) return `the last heartbeat is ${Math.round((heartbeatAt - nowMs) / 1000)} s ahead of the clock`;
  return null;
}

/**
 * The start-up check, in one transaction with the first heartbeat: returns the rotation it made, or
 * null. Runs before the core reads the epoch.
 */
export async function checkHeartbeatAtStart(store: RelayStore, nowMs: number, newEpoch?: () => string): Promise<EpochRotation | null> {
  return store.transaction(async (tx) => {
    const { heartbeatAt } = await tx.meta.get();
    const reason = staleHeartbeatReason(heartbeatAt, nowMs);
    const rotation =
      reason === null ? null : await rotateEpochInTx(tx, { nowMs, reason, detail: { heartbeat_at: heartbeatAt }, ...(newEpoch ? { newEpoch } : {}) });
    await tx.meta.writeHeartbeat(nowMs);
    return rotation;
  });
}

/** How often a standby starting beside the housekeeper looks again for a fresh heartbeat… */
export const STANDBY_START_POLL_MS = 250;
/** …and for how long, before it refuses to start. */
export const STANDBY_START_WAIT_MS = 60_000;

/**
 * The start of a process that serves a store others may serve too. The holder of the housekeeping
 * lease (RelayStore.housekeeping) makes the start-up check. Without the lease, another process
 * holds it and serves the epoch it read: this one is a standby, which never rotates the epoch
 * (the others would go on serving the old one) nor writes a heartbeat. It waits instead until the
 * stored heartbeat is fresh: a stale one means the holder is still in its own start-up check, whose
 * rotation this process must see before it reads the epoch (or cannot write: after `wait.ms` the
 * start is refused). Should the holder stop meanwhile, this process takes the lease and checks itself.
 * A lease holder rotates only while no other process serves the store (RelayStore.servesAlone).
 */
export async function checkAtStartOrStandBy(
  store: RelayStore,
  nowMs: () => number,
  wait = { pollMs: STANDBY_START_POLL_MS, ms: STANDBY_START_WAIT_MS },
): Promise<EpochRotation | null> {
  for (let waited = 0; ; waited += wait.pollMs) {
    if (await store.housekeeping()) {
      if (await store.servesAlone()) return checkHeartbeatAtStart(store, nowMs());
      // the lease was free (its holder died or lost its lock) while other processes serve: they serve
      // the stored epoch, so this one keeps it and only takes the heartbeat over
      await writeHeartbeat(store, nowMs());
      return null;
    }
    const { heartbeatAt } = await store.read((reader) => reader.meta.get());
    const reason = staleHeartbeatReason(heartbeatAt, nowMs());
    if (reason === null) return null;
    if (waited >= wait.ms) {
      throw new StoreOpenError(
        `another relay process runs the heartbeat of this store, but ${reason}: check that process, and that the clocks of the machines agree`,
      );
    }
    await delay(wait.pollMs);
  }
}

/** One heartbeat write. */
export function writeHeartbeat(store: RelayStore, nowMs: number): Promise<void> {
  return store.transaction((tx) => tx.meta.writeHeartbeat(nowMs));
}
