// Reads a push is known to make next, sent in the round trip of the read before them, so that a
// push's store checks take three round trips instead of six (docs/benchmark.md "PostgreSQL push
// path"): the target's sender list goes out with its enrolment, the target's queue usage and the
// sender's share of it with the dedup row (after the target's lock, like the reads they stand for).
//
// One per transaction attempt. An entry is used once, and every write of the domains whose rows it
// holds (enrolments, host records, items and their usage) drops them all first, so a read served
// from here sees what the same read sent at that moment would have seen: what committed before it
// (READ COMMITTED) and this transaction's own writes.
import type { Row } from '../sql/columns.ts';

/** Reads kept ahead in one transaction at most (a push sends three per target; more are simply not kept). */
export const MAX_READS_AHEAD = 1_000;

export class ReadAhead {
  readonly #reads = new Map<string, Promise<Row | undefined>>();

  /** keeps a read sent ahead under `key` (the read's name and its arguments) */
  keep(key: string, read: Promise<Row | undefined>): void {
    if (this.#reads.size < MAX_READS_AHEAD) this.#reads.set(key, read);
  }

  /** the read kept under `key`, once; undefined when there is none */
  take(key: string): Promise<Row | undefined> | undefined {
    const read = this.#reads.get(key);
    this.#reads.delete(key);
    return read;
  }

  /** before a write: what was read ahead may no longer be what a read would see */
  drop(): void {
    this.#reads.clear();
  }
}

/** `writes` with each method dropping what was read ahead before it runs. */
export function droppingReadsAhead<T extends object>(readAhead: ReadAhead, writes: T): T {
  return Object.fromEntries(
    Object.entries(writes).map(([name, write]) => [
      name,
      (...args: unknown[]): unknown => {
        readAhead.drop();
        return (write as (...args: unknown[]) => unknown)(...args);
      },
    ]),
  ) as T;
}
