// Who hears that items committed (held-pulls.ts): the process's own held pulls always; in a
// SQLite relay group the other workers too, through the primary over the IPC channel
// (relay-group.ts); on PostgreSQL every relay process on the database, through LISTEN/NOTIFY
// (store/postgres/item-wakes.ts). Told after the commit, never before.

/** Told after a commit that queued items for these target keys. */
export interface PullWakes {
  committed(targetKeys: Iterable<string>): void;
}

/** Keys gathered for one send at most: past it they leave at once rather than at the end of the event-loop turn. */
export const MAX_PENDING_WAKE_KEYS = 10_000;

/** Wakes the held pulls of this process, and hands the same keys to `others` (gathered over one event-loop turn) when they are more. */
export function pullWakes(local: (keys: Iterable<string>) => void, others?: (keys: string[]) => void): PullWakes {
  if (others === undefined) return { committed: local };
  let pending = new Set<string>();
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (pending.size === 0) return;
    const keys = [...pending];
    pending = new Set();
    others(keys);
  };
  return {
    committed(targetKeys) {
      const keys = [...targetKeys];
      local(keys);
      for (const key of keys) pending.add(key);
      if (pending.size >= MAX_PENDING_WAKE_KEYS) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
  };
}

/** The IPC message that carries committed target keys between a relay group's processes. */
export interface WakeMessage {
  type: 'agentmbx-relay-wake';
  keys: string[];
}

export function isWakeMessage(message: unknown): message is WakeMessage {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { type?: unknown }).type === 'agentmbx-relay-wake' &&
    Array.isArray((message as { keys?: unknown }).keys)
  );
}

export function wakeMessage(keys: string[]): WakeMessage {
  return { type: 'agentmbx-relay-wake', keys };
}
