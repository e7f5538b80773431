// Write requests whose callers are still being identified (the enrolment lookup, then the hop
// signature check, perhaps on a worker thread). The store's open commit group lingers while there
// are any (group-commit.ts), since each is about to queue a write; reads (pulls, lookups) never
// hold a group open.

export class PendingWriters {
  #count = 0;

  /** whether any write request is still being identified */
  any(): boolean {
    return this.#count > 0;
  }

  /** Runs `identify` (an async function: it never throws before it returns), counted as pending until it settles. */
  track<T>(identify: () => Promise<T>): Promise<T> {
    this.#count += 1;
    return identify().finally(() => {
      this.#count -= 1;
    });
  }
}
