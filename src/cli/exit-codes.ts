// The one exit-code table every `agentmbx` command uses. With --json, a failure prints
// {"error": "<sentence>", "code": "<NAME>"} on stdout, NAME being the key below.

export const EXIT_CODES = {
  /** the command did what it was asked */
  OK: 0,
  /**
   * it could not: refused by this host or the other side, doctor found a FAIL (with --strict, a WARN),
   * `status <id>` found a copy that ended rejected, undelivered, expired or unconfirmed; anything not below
   */
  FAILURE: 1,
  /** bad flags, arguments or values: nothing was done */
  USAGE: 2,
  /** no such message, agent, peer, or no host in $MBX_HOME */
  NOT_FOUND: 3,
  /** the host named is not paired with this one */
  NOT_PAIRED: 4,
  /** the peer, relay or daemon could not be reached, or is not an agentmbx host */
  UNREACHABLE: 5,
  /** the store cannot be used: damaged, full disk, read-only; missing, empty or another host's (restore it) */
  STORAGE: 6,
  /** `inbox --wait --timeout`: no mail came in time (nothing printed; with --json, {"timed_out": true, …}) */
  TIMED_OUT: 7,
  /** a bug: an error agentmbx did not expect (please report it) */
  INTERNAL: 70,
} as const;

export type ExitName = keyof typeof EXIT_CODES;
