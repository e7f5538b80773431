// The push rate limit (config pushes_per_minute): push requests per sender key in fixed one-minute
// windows. A lone relay counts in memory; the processes of a relay group count in the store, so the
// limit holds for the whole relay exactly (docs/relay-operator.md "Several processes"). That count is
// its own write transaction, committed before the push's items are queued: one more commit per push
// request, measured in docs/benchmark.md (folding it into the first item's transaction is the next step).
import { RATE_WINDOW_MS, RateWindow } from '../../common/rate-window.ts';
import { MAX_RATE_ADDRESSES } from '../config.ts';
import type { RelayStore } from '../store/relay-store.ts';

export interface PushRate {
  /** Counts one push request of `senderPubkey`; false when it is over the limit. */
  take(senderPubkey: string, nowMs: number): Promise<boolean>;
}

export function memoryPushRate(perMinute: number): PushRate {
  const windows = new RateWindow(perMinute, MAX_RATE_ADDRESSES);
  return { take: async (senderPubkey, nowMs) => windows.take(senderPubkey, nowMs) };
}

/** The store's window key of a sender's pushes. */
export function pushRateKey(senderPubkey: string): string {
  return `push:${senderPubkey}`;
}

export function storePushRate(store: RelayStore, perMinute: number): PushRate {
  return {
    take: (senderPubkey, nowMs) => store.transaction(async (tx) => (await tx.rateWindows.count(pushRateKey(senderPubkey), nowMs, RATE_WINDOW_MS)) <= perMinute),
  };
}
