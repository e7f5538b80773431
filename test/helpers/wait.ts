// Waiting on a condition with a deadline, never on a guessed sleep: a probe runs again after a short
// pause until it reports the condition holds, and a timeout names what was awaited and what was seen.
import { setTimeout as pause } from 'node:timers/promises';

/** Pause between two probes (a probe usually runs a CLI process, so it paces itself too). */
export const PROBE_PAUSE_MS = 250;

/**
 * Runs `probe` until it returns null (the condition holds). Anything else it returns describes what
 * it sees now; after `deadlineMs` that description goes into the failure.
 */
export async function waitUntil(what: string, deadlineMs: number, probe: () => Promise<string | null>): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const seen = await probe();
    if (seen === null) return;
    if (Date.now() >= deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}; last seen: ${seen}`);
    await pause(PROBE_PAUSE_MS);
  }
}

/** `promise`, or a failure naming `what` once `deadlineMs` passed first. */
export async function withDeadline<T>(what: string, deadlineMs: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${deadlineMs} ms waiting for ${what}`)), deadlineMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
