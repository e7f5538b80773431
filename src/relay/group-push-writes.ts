// The pushes of a relay group are written by its primary (issue 17). A worker serves the request:
// it parses it, checks the caller's hop signature and the items' pure checks, hands the checked
// items to the primary over the cluster's IPC channel, and signs the accepts of what the primary
// answers. The primary writes every push of the group through one store connection, so its commit
// groups gather the pushes of every worker (on one SQLite file, workers writing for themselves
// each committed and synced smaller groups: more pages and syncs per item) and it counts the push
// rate of the whole group in one place.
//
// An answer comes only after the items' commit is durable, as in a lone relay. A worker killed while
// it waits loses nothing: the primary's commit stands and the sender's retry is answered
// `duplicate` with the same seq; a primary that dies takes its workers with it (relay-group.ts).
// The channel uses the cluster's "advanced" serialization, so item wires travel as Buffers.
import type { Worker } from 'node:cluster';
import type { CheckedItem } from './core/item-checks.ts';
import type { ItemOutcome, PushWriter } from './core/push-writes.ts';
import { StoreClosedError, StoreDiskError, StoreOverloadedError, type StoreDiskFault } from './store/errors.ts';

/** Push requests one worker may have waiting for the primary; beyond it a push is refused as an overloaded store. */
export const MAX_WAITING_PUSH_WRITES = 10_000;

const WRITE = 'agentmbx-push-write';
const WRITTEN = 'agentmbx-push-written';
const FAILED = 'agentmbx-push-failed';

interface WriteRequest {
  type: typeof WRITE;
  id: number;
  sender: string;
  items: CheckedItem[];
}

/** Why the primary could not write: the kinds a worker answers differently (HTTP 507/503/500). */
type WriteFailure = { kind: 'disk'; fault: StoreDiskFault } | { kind: 'busy' } | { kind: 'other'; message: string };

type WriteAnswer = { type: typeof WRITTEN; id: number; outcomes: ItemOutcome[] } | { type: typeof FAILED; id: number; failure: WriteFailure };

/** One end of the IPC channel between a worker and its primary. */
export interface GroupChannel {
  send(message: unknown): void;
  onMessage(listener: (message: unknown) => void): void;
  /** called once when the channel closes */
  onClose(listener: () => void): void;
}

function typed<T extends { type: string }>(type: T['type']) {
  return (message: unknown): message is T => typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}
const isWriteRequest = typed<WriteRequest>(WRITE);
const isAnswer = (message: unknown): message is WriteAnswer => typed<WriteAnswer>(WRITTEN)(message) || typed<WriteAnswer>(FAILED)(message);

/** In a worker: the channel to the primary (this process's IPC channel). */
export function primaryChannel(): GroupChannel {
  return {
    send: (message) => {
      if (process.send === undefined || !process.connected) throw new StoreClosedError('the relay primary is gone');
      // with a callback a closed channel is reported there (the disconnect listener rejects the waiting writes), not thrown
      process.send(message, undefined, undefined, () => {});
    },
    onMessage: (listener) => { process.on('message', listener); },
    onClose: (listener) => { process.once('disconnect', listener); },
  };
}

/** In the primary: the channel to one worker. */
export function workerChannel(worker: Worker): GroupChannel {
  return {
    // a worker that died meanwhile is not an error of the primary's: its sender retries elsewhere
    send: (message) => { if (worker.isConnected()) worker.send(message as object, undefined, () => {}); },
    onMessage: (listener) => { worker.on('message', listener); },
    onClose: (listener) => { worker.once('disconnect', listener); },
  };
}

/** In a worker: a PushWriter that asks the primary. `storeDir` names the disk in a disk fault's message. */
export function primaryPushWriter(channel: GroupChannel, storeDir: string): PushWriter {
  const waiting = new Map<number, { resolve: (outcomes: ItemOutcome[]) => void; reject: (error: unknown) => void }>();
  let nextId = 1;
  let closed = false;
  channel.onMessage((message) => {
    if (!isAnswer(message)) return;
    const call = waiting.get(message.id);
    if (call === undefined) return;
    waiting.delete(message.id);
    if (message.type === WRITTEN) call.resolve(message.outcomes);
    else call.reject(failureError(message.failure, storeDir));
  });
  channel.onClose(() => {
    closed = true;
    for (const call of waiting.values()) call.reject(new StoreClosedError('the relay primary is gone'));
    waiting.clear();
  });
  return {
    write(sender, items) {
      if (closed) return Promise.reject(new StoreClosedError('the relay primary is gone'));
      if (waiting.size >= MAX_WAITING_PUSH_WRITES) return Promise.reject(new StoreOverloadedError());
      const id = nextId++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        try {
          channel.send({ type: WRITE, id, sender, items } satisfies WriteRequest);
        } catch (error) {
          waiting.delete(id);
          reject(error instanceof StoreClosedError ? error : new StoreClosedError('the relay primary is gone', { cause: error }));
        }
      });
    },
  };
}

/** In the primary: writes the pushes a worker hands over, and answers it (nothing, if it died meanwhile). */
export function servePushWrites(channel: GroupChannel, writer: PushWriter): void {
  channel.onMessage((message) => {
    if (!isWriteRequest(message)) return;
    const { id } = message;
    writer.write(message.sender, message.items).then(
      (outcomes) => { channel.send({ type: WRITTEN, id, outcomes } satisfies WriteAnswer); },
      (error: unknown) => { channel.send({ type: FAILED, id, failure: writeFailure(error) } satisfies WriteAnswer); },
    );
  });
}

function writeFailure(error: unknown): WriteFailure {
  if (error instanceof StoreDiskError) return { kind: 'disk', fault: error.fault };
  if (error instanceof StoreOverloadedError || error instanceof StoreClosedError) return { kind: 'busy' };
  return { kind: 'other', message: error instanceof Error ? error.message : String(error) };
}

function failureError(failure: WriteFailure, storeDir: string): Error {
  if (failure.kind === 'disk') return new StoreDiskError(failure.fault, storeDir);
  if (failure.kind === 'busy') return new StoreOverloadedError();
  return new Error(`the relay primary could not write a push: ${failure.message}`);
}
