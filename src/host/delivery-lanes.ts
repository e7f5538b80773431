// Deliveries in flight, one lane per (peer, transport): a slow or dead path holds back only its own
// lane's rows, never another peer's, the other transport's, or the relay pull. A lane takes one
// delivery at a time, so a peer gets one LAN attempt at a time; rows in flight are not offered again.

/** Most lanes busy at once (peers × transports); a flush leaves further lanes for a later pass. */
export const DELIVERY_LANES_MAX = 256;

export class DeliveryLanes {
  readonly #running = new Map<string, Promise<void>>();
  /** ids of the rows the running lanes carry (at most DELIVERY_LANES_MAX × FLUSH_ROWS_MAX) */
  readonly #rows = new Set<number>();
  readonly #onError: (err: unknown) => void;
  readonly #onDone: () => void;

  /** `onDone` hears each lane that finished (the daemon flushes again then, for rows it skipped). */
  constructor(onError: (err: unknown) => void, onDone: () => void = () => {}) {
    this.#onError = onError;
    this.#onDone = onDone;
  }

  /** A delivery of this row is in flight. */
  carries(rowId: number): boolean {
    return this.#rows.has(rowId);
  }

  /** Starts `work` carrying `rowIds` in lane `key`; false (nothing started) when that lane or every lane is busy. */
  start(key: string, rowIds: readonly number[], work: () => Promise<void>): boolean {
    if (this.#running.has(key) || this.#running.size >= DELIVERY_LANES_MAX) return false;
    for (const id of rowIds) this.#rows.add(id);
    const done = work()
      .catch(this.#onError)
      .finally(() => {
        for (const id of rowIds) this.#rows.delete(id);
        this.#running.delete(key);
        this.#onDone();
      });
    this.#running.set(key, done);
    return true;
  }

  /** Resolves once no lane is busy (lanes started meanwhile included). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running.values());
  }
}
