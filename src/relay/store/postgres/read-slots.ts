// Which read gets the next pooled connection (relay-store.ts ReadPriority). Reads take at most all
// connections but one, which stays for the writer (a process commits one group at a time), so a
// push's transaction never waits behind reads; a woken held pull's re-read goes before requests'
// reads, and held pulls' own reads go last and on at most HELD_READ_SHARE of the connections, so
// a herd of hosts re-pulling together (20,000 after a relay restart) leaves the rest to pushes,
// their wake-ups and every other request. Measured with 20,000 held pulls on two processes: the
// pool's own first-come order let a push wait seconds behind held pulls' reads.
import type { ReadPriority } from '../relay-store.ts';
import { StoreOverloadedError } from '../errors.ts';

/** Share of the read slots held pulls' own reads may use at once (at least one). */
export const HELD_READ_SHARE = 0.5;
/** Reads waiting for a slot at most; past it a read fails at once as overloaded (503 STORE_BUSY). */
export const MAX_WAITING_READS = 50_000;

interface Waiter {
  grant: (release: () => void) => void;
  timer: NodeJS.Timeout;
}

/** A first-in first-out queue that takes each entry out in O(1): Array#shift moves a large array's every entry (tens of thousands wait in a herd). */
class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head += 1;
    if (this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** O(n), for the rare waiter that times out */
  delete(item: T): void {
    const at = this.#items.indexOf(item, this.#head);
    if (at >= 0) this.#items.splice(at, 1);
  }
}

export class ReadSlots {
  readonly #slots: number;
  readonly #heldSlots: number;
  readonly #waitMs: number;
  #running = 0;
  #heldRunning = 0;
  readonly #queues: Record<ReadPriority, Fifo<Waiter>> = { woken: new Fifo(), ordinary: new Fifo(), held: new Fifo() };
  #waiting = 0;

  /** `connections`: the pool's size; a read waiting longer than `waitMs` for a slot fails as overloaded. */
  constructor(connections: number, waitMs: number) {
    this.#slots = Math.max(1, connections - 1);
    this.#heldSlots = Math.max(1, Math.floor(this.#slots * HELD_READ_SHARE));
    this.#waitMs = waitMs;
  }

  /** Waits for a slot of `priority`; the answer gives it back (once). */
  async take(priority: ReadPriority): Promise<() => void> {
    if (this.#waiting === 0 && this.#fits(priority)) return this.#start(priority);
    if (this.#waiting >= MAX_WAITING_READS) throw new StoreOverloadedError();
    return new Promise<() => void>((resolve, reject) => {
      const queue = this.#queues[priority];
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          queue.delete(waiter);
          this.#waiting -= 1;
          reject(new StoreOverloadedError());
        }, this.#waitMs),
      };
      queue.push(waiter);
      this.#waiting += 1;
      this.#next();
    });
  }

  #fits(priority: ReadPriority): boolean {
    return this.#running < this.#slots && (priority !== 'held' || this.#heldRunning < this.#heldSlots);
  }

  #start(priority: ReadPriority): () => void {
    this.#running += 1;
    if (priority === 'held') this.#heldRunning += 1;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#running -= 1;
      if (priority === 'held') this.#heldRunning -= 1;
      this.#next();
    };
  }

  /** Hands free slots to the waiting reads, woken first, held pulls' last. */
  #next(): void {
    for (const priority of ['woken', 'ordinary', 'held'] as const) {
      const queue = this.#queues[priority];
      while (queue.length > 0 && this.#fits(priority)) {
        const waiter = queue.shift() as Waiter;
        clearTimeout(waiter.timer);
        this.#waiting -= 1;
        waiter.grant(this.#start(priority));
      }
    }
  }
}
