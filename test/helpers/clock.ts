// The one clock of the tests, shared by relays, hosts and the store: tests move time explicitly,
// never by sleeping; and timers they fire by hand.
import type { Ticker } from '../../src/common/ticker.ts';

/** Where test time starts unless a test says otherwise. */
export const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);

/** A settable clock: `now` is the time in ms (set it or `advance` it); code under test gets `nowMs`. */
export class TestClock {
  now: number;
  constructor(start = T0) {
    this.now = start;
  }
  readonly nowMs = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

/** A timer (poll summary, store lock check) the test fires by hand (no real sleeps). */
export function handTicker(): { ticker: Ticker; fire(): void; stopped(): boolean } {
  let tick: (() => void) | null = null;
  let stopped = false;
  return {
    ticker: (fn) => {
      tick = fn;
      return () => {
        stopped = true;
      };
    },
    fire: () => tick?.(),
    stopped: () => stopped,
  };
}
