// GET /healthz: healthy when the store commits a write and the heartbeat is fresh; otherwise the
// reason, for a load balancer or an operator.
import type { RelayStore } from '../store/relay-store.ts';

/** A write the store has not committed in this long counts as unhealthy (the probe answers 503). */
export const HEALTH_WRITE_TIMEOUT_MS = 5_000;
/** A heartbeat older than this many heartbeat periods counts as stale. */
export const HEARTBEAT_STALE_PERIODS = 3;

export type Health = { ok: true } | { ok: false; reason: string };

export interface HealthOptions {
  store: RelayStore;
  nowMs: () => number;
  heartbeatIntervalMs: number;
  writeTimeoutMs?: number;
  /** the disk fault the store is refusing writes for (a small probe may fit where pushes do not) */
  diskFault?: () => Error | null;
  /** starts the write timeout; returns its cancel (tests fire it when they choose) */
  startTimer?: (fire: () => void, ms: number) => () => void;
}

function startRealTimer(fire: () => void, ms: number): () => void {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
}

/**
 * Commits a write that changes nothing (the epoch, rewritten with its own value) and reads the
 * heartbeat in the same transaction.
 */
export async function checkHealth(options: HealthOptions): Promise<Health> {
  const timeoutMs = options.writeTimeoutMs ?? HEALTH_WRITE_TIMEOUT_MS;
  let cancelTimer = (): void => {};
  const timedOut = new Promise<'timeout'>((resolve) => {
    cancelTimer = (options.startTimer ?? startRealTimer)(() => resolve('timeout'), timeoutMs);
  });
  const write = options.store.transaction(async (tx) => {
    const meta = await tx.meta.get();
    await tx.meta.setEpoch(meta.epoch);
    return meta.heartbeatAt;
  });
  try {
    const heartbeatAt = await Promise.race([write, timedOut]);
    if (heartbeatAt === 'timeout') return { ok: false, reason: `the store did not commit a write within ${timeoutMs} ms` };
    const fault = diskFaultReason(options);
    if (fault !== null) return { ok: false, reason: fault };
    if (heartbeatAt === null) return { ok: false, reason: 'no heartbeat has been written yet' };
    const age = options.nowMs() - heartbeatAt;
    const limit = HEARTBEAT_STALE_PERIODS * options.heartbeatIntervalMs;
    if (age > limit) return { ok: false, reason: `the heartbeat is ${Math.round(age / 1000)} s old (limit ${Math.round(limit / 1000)} s)` };
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: diskFaultReason(options) ?? `the store refused a write: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    cancelTimer();
    write.catch(() => {}); // a write that lost the race may still fail later: already reported
  }
}

/** The same reason whether this probe was refused or fitted where larger writes do not. */
function diskFaultReason(options: HealthOptions): string | null {
  const fault = options.diskFault?.() ?? null;
  return fault === null ? null : `the store refuses writes: ${fault.message}`;
}
