// How an agent was told of a delivery, for `status` and mbx_status: the outcomes the wake module
// recorded here, or what a remote recipient host's `notified` receipt said. Apart from wake.ts so
// that receipts (which it serves) load no wake rules.
import type { HostNode } from '../core/node.ts';
import { WAKE_PATHS, type WakePath } from '../store/wake-tables.ts';

/**
 * How a local agent was told of a delivery: the paths that woke it ("hook", "channel, exec"), or
 * "none" (with the loop guard's reason when it held the message).
 */
export function wakeText(node: HostNode, msgId: string, agent: string): string {
  const outcomes = node.store.wake.outcomes(msgId, agent);
  const woke = WAKE_PATHS.filter((p) => outcomes.some((o) => o.path === p && o.woke === 1));
  if (woke.length > 0) return woke.join(', ');
  const held = outcomes.find((o) => o.woke === 0);
  return held?.detail == null ? 'none' : `none (${held.detail})`;
}

/** The wake path a remote recipient host named in a `notified` receipt's note, or null. */
export function wakeFromReceiptNote(state: string, note: string | undefined): WakePath | null {
  if (state !== 'notified' || note === undefined) return null;
  const path = /^woken by ([a-z]+)$/.exec(note)?.[1];
  return (WAKE_PATHS as readonly string[]).includes(path ?? '') ? (path as WakePath) : null;
}
