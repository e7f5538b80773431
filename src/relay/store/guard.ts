// What every backend hands a read's or a transaction's fn: a way to its connection that refuses use
// once that read or transaction ended, so a promise that escapes fn cannot touch the store outside
// it (the PDS transactor's guard).
import { TransactionMisuseError } from './errors.ts';

export interface Guard<T> {
  use: () => T;
  /** called when the read or transaction ends (commit or rollback); `use` refuses from then on */
  end(): void;
}

export function guardUse<T>(connection: T): Guard<T> {
  let live = true;
  return {
    use() {
      if (!live) throw new TransactionMisuseError('a relay store transaction was used after it ended');
      return connection;
    },
    end() {
      live = false;
    },
  };
}
