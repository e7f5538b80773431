// The push rate limit (config pushes_per_minute): push requests per sender key in fixed one-minute
// windows. A lone relay counts in memory; the processes of a relay group count in the store, so the
// limit holds for the whole relay exactly (docs/relay-operator.md "Several processes").
//
// The store count costs no commit of its own: it is written by the transaction of the request's
// first item, which joins the same commit group as the other items. The store runs transactions in
// submission order, so the first item's fn has counted the request before any other item's fn
// runs; the verdict is read from there. An item that never reaches the store (refused by a pure
// check) waits for that verdict. A request over the limit commits its count and writes nothing else.
import { RATE_WINDOW_MS, RateWindow } from '../../common/rate-window.ts';
import { MAX_RATE_ADDRESSES } from '../config.ts';
import type { RelayTransactor } from '../store/relay-store.ts';

/** One push request's place in its sender's window. */
export interface PushRateGate {
  /** whether the first item's transaction must call `count` (a store count) */
  readonly countsInStore: boolean;
  /** Counts the request inside `tx` (the first item's transaction); true when within the limit. */
  count(tx: RelayTransactor): Promise<boolean>;
  /** The verdict, from memory or from a count already run in this request's first transaction. */
  counted(): boolean;
  /** The verdict, once known; rejects when the first item's transaction failed before counting. */
  readonly verdict: Promise<boolean>;
  /** the first item's transaction failed: items waiting for the verdict fail with it */
  fail(error: unknown): void;
}

export interface PushRate {
  /** Opens the gate of one push request of `senderPubkey` at `nowMs`. */
  open(senderPubkey: string, nowMs: number): PushRateGate;
}

export function memoryPushRate(perMinute: number): PushRate {
  const windows = new RateWindow(perMinute, MAX_RATE_ADDRESSES);
  return {
    open(senderPubkey, nowMs) {
      const within = windows.take(senderPubkey, nowMs);
      return { countsInStore: false, count: async () => within, counted: () => within, verdict: Promise.resolve(within), fail: () => {} };
    },
  };
}

/** The store's window key of a sender's pushes. */
export function pushRateKey(senderPubkey: string): string {
  return `push:${senderPubkey}`;
}

export function storePushRate(perMinute: number): PushRate {
  return {
    open(senderPubkey, nowMs) {
      let within: boolean | null = null;
      let decide!: (within: boolean) => void;
      let failed!: (error: unknown) => void;
      const verdict = new Promise<boolean>((resolve, reject) => { decide = resolve; failed = reject; });
      // a failed first item rejects a verdict nobody may wait for (a single-item request)
      verdict.catch(() => {});
      return {
        countsInStore: true,
        async count(tx) {
          // a rerun (a PostgreSQL deadlock victim runs again) counts again: its first count was rolled back
          within = (await tx.rateWindows.count(pushRateKey(senderPubkey), nowMs, RATE_WINDOW_MS)) <= perMinute;
          decide(within);
          return within;
        },
        counted() {
          // the store runs a request's transactions in submission order: the first one has counted
          if (within === null) throw new Error('a push item ran before its request was counted against the push rate');
          return within;
        },
        verdict,
        fail: (error) => { failed(error); },
      };
    },
  };
}
