// How long this host's held pull may wait at a relay (protocol.md §3.4 `wait`): what the daemon asks
// for (relay-link.ts) and what doctor reports. A relay that advertises no `max_wait_s` (AgentMBX's)
// holds no pulls and is polled on the daemon's tick.

/** Seconds a held pull asks the relay to hold it at most (the relay lowers it to its max_wait_s). */
export const HELD_PULL_WAIT_S = 55;

/** The relay's `max_wait_s` at most HELD_PULL_WAIT_S, whole seconds; null when it holds no pulls. */
export function heldPullWaitS(limits: Record<string, number>): number | null {
  const advertised = limits['max_wait_s'];
  return advertised !== undefined && advertised >= 1 ? Math.min(HELD_PULL_WAIT_S, Math.floor(advertised)) : null;
}
