// The IPC channel between a relay group's worker and its primary, in one process: messages go
// through the V8 serializer (the cluster's "advanced" serialization) and arrive on a later turn.
import { deserialize, serialize } from 'node:v8';
import type { GroupChannel } from '../../src/relay/group-push-writes.ts';

export interface LinkedChannels {
  worker: GroupChannel;
  primary: GroupChannel;
  /** closes the channel at both ends, as a dead process would */
  close(): void;
}

export function linkedChannels(): LinkedChannels {
  const listeners = { worker: [] as Array<(m: unknown) => void>, primary: [] as Array<(m: unknown) => void> };
  const closers: Array<() => void> = [];
  let open = true;
  const end = (self: 'worker' | 'primary', peer: 'worker' | 'primary'): GroupChannel => ({
    send: (message) => {
      if (!open) return;
      const copy = deserialize(serialize(message));
      setImmediate(() => { if (open) for (const listener of listeners[peer]) listener(copy); });
    },
    onMessage: (listener) => { listeners[self].push(listener); },
    onClose: (listener) => { closers.push(listener); },
  });
  return {
    worker: end('worker', 'primary'),
    primary: end('primary', 'worker'),
    close: () => {
      open = false;
      for (const closer of closers.splice(0)) closer();
    },
  };
}
