// The push rate limit (config pushes_per_minute): push requests per sender key in fixed one-minute
// windows. A lone relay counts in memory; the processes of a relay group count in the store, so the
// limit holds for the whole relay exactly (docs/relay-operator.md "Several processes").
//
// The store count costs no commit of its own: it is written by the transaction of one of the
// request's items, which joins the same commit group as the others. The store runs transactions in
// submission order, so the first item's transaction counts the request and the others read its
// verdict; an item refused by a pure check (no transaction) waits for that verdict. If the counting
// transaction is rolled back (a PostgreSQL deadlock victim runs again in the next group while the
// rest of its group goes on), its count and verdict are forgotten: the next item of the request to
// run counts in its place. So the items that commit were admitted by a count that commits with one
// of them. A request over the limit commits its count and nothing else.
import { RATE_WINDOW_MS, RateWindow } from '../../common/rate-window.ts';
import { MAX_RATE_ADDRESSES } from '../config.ts';
import type { RelayTransactor } from '../store/relay-store.ts';

/** One push request's place in its sender's window. */
export interface PushRateGate {
  /** whether the count is written by an item's transaction (the request's first item must open one) */
  readonly countsInStore: boolean;
  /** the verdict if already known (always, when counted in memory); null until a transaction counted */
  known(): boolean | null;
  /** Inside the transaction of item `item`: counts the request there if that is still to do; true when within the limit. */
  admits(tx: RelayTransactor, item: number): Promise<boolean>;
  /** The transaction of item `item` is rolled back: a count it made is undone, and the next item to run counts again. */
  rolledBack(item: number): void;
  /** The verdict, for items that open no transaction; rejects when the first item's transaction failed before any count. */
  readonly verdict: Promise<boolean>;
  /** the first item's transaction failed: items waiting for a verdict nobody else will give fail with it */
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
      return { countsInStore: false, known: () => within, admits: async () => within, rolledBack: () => {}, verdict: Promise.resolve(within), fail: () => {} };
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
      // the item whose transaction holds the count (null: none, or its transaction was rolled back)
      let holder: number | null = null;
      let decide!: (within: boolean) => void;
      let failed!: (error: unknown) => void;
      const verdict = new Promise<boolean>((resolve, reject) => {
        decide = resolve;
        failed = reject;
      });
      // a failed first item rejects a verdict nobody may wait for (a single-item request)
      verdict.catch(() => {});
      return {
        countsInStore: true,
        known: () => within,
        async admits(tx, item) {
          // a count made and not rolled back stands (rolledBack clears both)
          if (within !== null) return within;
          holder = item;
          within = (await tx.rateWindows.count(pushRateKey(senderPubkey), nowMs, RATE_WINDOW_MS)) <= perMinute;
          decide(within);
          return within;
        },
        rolledBack(item) {
          if (holder !== item) return;
          holder = null;
          within = null;
        },
        verdict,
        fail: (error) => {
          failed(error);
        },
      };
    },
  };
}
