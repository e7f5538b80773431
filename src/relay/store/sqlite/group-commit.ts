// When the SQLite store closes a commit group (issue 7). Writes queued together share one
// BEGIN … COMMIT, each inside its own savepoint, so one fsync covers the whole group.
//
// A group takes what is queued and closes when the queue runs dry, at `maxItems`, or once it has
// been open `maxWaitMs`, whichever comes first (read-only transactions have their own connection and
// queue, so they never wait for a group). A group never waits on a timer: while the relay is busy
// (a group committed within the last `maxWaitMs`), the start of the next group is put off by one
// event-loop turn so that requests already read from the network can join it, and a group that runs
// dry while smaller than the one before, or while write requests are still being identified (their
// callers looked up and hop signatures checked), lingers one more turn at a time for stragglers
// (bigger groups write fewer pages per item). An idle relay starts a lone transaction at once and
// commits it without waiting.

import type { GroupCommitPolicy } from '../group-commit-policy.ts';
import type { Gathering } from '../sql/group-runner.ts';

/** How the store reads time and puts off work; tests inject both. */
export interface GroupScheduler {
  nowMs(): number;
  /** runs `fn` after the event loop has delivered the I/O already waiting (default setImmediate) */
  defer(fn: () => void): void;
}

export const SYSTEM_SCHEDULER: GroupScheduler = {
  nowMs: () => performance.now(),
  defer: (fn) => {
    setImmediate(fn);
  },
};

/** Whether the next group should start now (idle relay) or after one event-loop turn (busy relay). */
export function startsAtOnce(policy: GroupCommitPolicy, lastCommitAt: number | null, nowMs: number): boolean {
  return policy.maxItems <= 1 || lastCommitAt === null || nowMs - lastCommitAt >= policy.maxWaitMs;
}

export type QueueHead = 'empty' | 'write';

/**
 * Whether an open group whose queue ran dry waits one more event-loop turn for writes still on their
 * way: only on a busy relay, while the group is younger than `maxWaitMs` and not full, and either
 * smaller than the one before it or while write requests are still being identified (a push looks
 * its caller up and checks its hop signature just before it writes; pulls and other reads never
 * count). An idle relay's lone transaction never lingers.
 */
export function lingers(
  policy: GroupCommitPolicy,
  group: { size: number; previousSize: number; openedAt: number; writersPending: boolean },
  lastCommitAt: number | null,
  nowMs: number,
): boolean {
  const { size, previousSize, openedAt, writersPending } = group;
  const busy = lastCommitAt !== null && openedAt - lastCommitAt < policy.maxWaitMs;
  return busy && (size < previousSize || writersPending) && size < policy.maxItems && nowMs - openedAt < policy.maxWaitMs;
}

/** Whether an open group commits now instead of taking the next queued transaction. */
export function closesGroup(policy: GroupCommitPolicy, size: number, openedAt: number, nowMs: number, next: QueueHead): boolean {
  return next !== 'write' || size >= policy.maxItems || nowMs - openedAt >= policy.maxWaitMs;
}

/**
 * The SQLite store's gathering rule for the shared runner (../sql/group-runner.ts), by the rules
 * above. `beforeBegin`: a shared store gathers the whole group before it takes the write lock; a
 * lone one takes members while the group is open (and holds the lock meanwhile: no other process
 * wants it).
 */
export function policyGathering(policy: GroupCommitPolicy, scheduler: GroupScheduler, writersPending: () => boolean, beforeBegin: boolean): Gathering {
  const turn = (): Promise<void> =>
    new Promise<void>((resolve) => {
      scheduler.defer(resolve);
    });
  return {
    beforeBegin,
    start: (state) => (startsAtOnce(policy, state.lastCommitAt, scheduler.nowMs()) ? undefined : turn()),
    async joins(state, size, openedAt) {
      // While a WAL sync runs, committing would not answer anyone sooner (a commit waits for the next
      // sync anyway): the group stays open and takes the writes that arrive until that sync ends.
      while (state.waiting === 0 && state.afterCommitting !== null && size < policy.maxItems) await state.arrival(state.afterCommitting);
      // a turn at a time: again only while write requests are still being identified
      const shape = () => ({ size, previousSize: state.lastGroupSize, openedAt, writersPending: writersPending() });
      while (state.waiting === 0 && lingers(policy, shape(), state.lastCommitAt, scheduler.nowMs())) {
        await turn();
        if (!writersPending()) break;
      }
      return !closesGroup(policy, size, openedAt, scheduler.nowMs(), state.waiting === 0 ? 'empty' : 'write');
    },
  };
}
