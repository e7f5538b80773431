// A task the running relay repeats (the heartbeat, the expiry sweep): never two runs at once, the
// timer unref'd so it never keeps the process alive, and stop() waits for a run in flight so the
// store can close after it.

export interface Periodic {
  /** clears the timer and resolves once no run is in flight */
  stop(): Promise<void>;
}

export function startPeriodic(task: () => Promise<void>, intervalMs: number, options: { runNow?: boolean; onError: (error: unknown) => void }): Periodic {
  let running: Promise<void> | null = null;
  let stopped = false;
  const run = (): void => {
    if (stopped || running !== null) return;
    running = task()
      .catch(options.onError)
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(run, intervalMs);
  timer.unref();
  if (options.runNow === true) run();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
