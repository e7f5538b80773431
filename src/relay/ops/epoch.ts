// Epoch rotation (design §5): a new random epoch tells every sender to re-push what it holds and
// every receiver to pull again from 0. Used by a restore, by the start-up heartbeat rule and by
// `agentmbx relay rotate-epoch`; each rotation is written to the operations log with its reason.
import { lockForOfflineOperation } from './ops-error.ts';
import type { RelayTransactor } from '../store/relay-store.ts';
import { openRelayStore, readRelayStoreMeta, storeBackendOf } from '../store/open-relay-store.ts';
import { randomEpoch } from '../store/random-epoch.ts';

export interface EpochRotation {
  from: string;
  to: string;
  reason: string;
}

/** Inside the caller's transaction: writes a new epoch and logs why. */
export async function rotateEpochInTx(
  tx: RelayTransactor,
  options: { nowMs: number; reason: string; newEpoch?: () => string; detail?: Record<string, unknown> },
): Promise<EpochRotation> {
  const from = (await tx.meta.get()).epoch;
  const to = (options.newEpoch ?? randomEpoch)();
  await tx.meta.setEpoch(to);
  await tx.meta.appendOpsLog({ at: options.nowMs, kind: 'epoch-rotated', detail: { reason: options.reason, from, to, ...options.detail } });
  return { from, to, reason: options.reason };
}

/**
 * `agentmbx relay rotate-epoch`: takes the store's lock for itself (so it is refused while a relay
 * serves the store, and no relay can start meanwhile): the writer lock file of a SQLite store, the
 * exclusive store lock of a PostgreSQL one (`store`, a postgres:// URL); rotates, releases.
 */
export async function rotateEpochOffline(options: { storeDir: string; store?: string; nowMs?: () => number; newEpoch?: () => string }): Promise<EpochRotation> {
  const location = options.store ?? options.storeDir;
  const lock = storeBackendOf(location) === 'sqlite' ? await lockForOfflineOperation(location, 'stop it before rotating the epoch') : null;
  try {
    const { relayPubkey } = await readRelayStoreMeta(location);
    const store = await openRelayStore({ location, relayPubkey, exclusive: true });
    try {
      const nowMs = (options.nowMs ?? Date.now)();
      return await store.transaction((tx) =>
        rotateEpochInTx(tx, {
          nowMs,
          reason: 'operator',
          ...(options.newEpoch ? { newEpoch: options.newEpoch } : {}),
        }),
      );
    } finally {
      await store.close();
    }
  } finally {
    lock?.release();
  }
}
