// A repeating timer that tests can replace with one they fire by hand.

/** Runs `tick` every `everyMs` and returns what stops it. The relay's never keeps the process alive; tests fire theirs by hand. */
export type Ticker = (tick: () => void, everyMs: number) => () => void;

export const UNREF_TICKER: Ticker = (tick, everyMs) => {
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return () => clearInterval(timer);
};
