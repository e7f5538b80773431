// What the bench (held-pulls.ts) and its fleet processes (fleet-process.ts) tell each other over the
// IPC channel, and the clock both take their timestamps from.

/**
 * Milliseconds since the Unix epoch, to a fraction of a millisecond, comparable between processes:
 * each process's performance.timeOrigin (its start, read from the system clock) plus its monotonic
 * performance.now(). The wake phase takes a push's accept in the bench and its held pull's answer in
 * a fleet process by this clock; Date.now() would round both to whole milliseconds.
 */
export function sharedClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export type PullMode = 'held' | 'polling';

/** Why pulls failed, counted by cause (an error code or `HTTP <status>`). */
export type FailureCauses = Record<string, number>;

export type ToFleetProcess =
  /** enrol `count` hosts named `${prefix}${i}` on the relay at `url`; their pulls leave from `localAddress` when given */
  | { op: 'enrol'; url: string; prefix: string; count: number; localAddress?: string }
  /** run the pulls of the first `hosts` enrolled hosts: held (`wait=waitS`) or polling every `pollMs` */
  | { op: 'run'; mode: PullMode; hosts: number; waitS: number; pollMs: number }
  /** report the pulls answered so far */
  | { op: 'count' }
  /** abort every pull out (the relay sees its connection close) and stop re-issuing them */
  | { op: 'stop' };

export type FromFleetProcess =
  /** the enrolled hosts, as [name, public key] */
  | { op: 'enrolled'; hosts: Array<[string, string]> }
  | { op: 'running' }
  /** with this process's resident set size, bytes */
  | { op: 'count'; pulls: number; failures: number; causes: FailureCauses; rssBytes: number }
  | { op: 'stopped' }
  /** a pull answered with these items, at `at` (sharedClockMs) */
  | { op: 'items'; ids: string[]; at: number }
  /** the process cannot go on (its enrolment failed) */
  | { op: 'failed'; reason: string };
