// The readers and transactors handed to one read's or one transaction's fn over its PostgreSQL
// connection. Every method refuses once that read or transaction ended, so a promise that escapes fn
// cannot touch the store outside it.
import type pg from 'pg';
import { TransactionMisuseError } from '../errors.ts';
import type { RelayReader, RelayTransactor } from '../relay-store.ts';
import { accountReader, accountTransactor } from './accounts.ts';
import { enrolmentReader, enrolmentTransactor } from './enrolments.ts';
import { hostRecordReader, hostRecordTransactor } from './host-records.ts';
import { itemReader, itemTransactor } from './items.ts';
import type { TargetLocks } from './locks.ts';
import { metaReader, metaTransactor } from './meta.ts';
import { challengeTransactor, rateWindowTransactor } from './shared-state.ts';
import { sqlOver, type UsePg } from './sql.ts';
import { usageReader, usageTransactor } from './usage.ts';

export interface Guard {
  use: UsePg;
  /** called when the read or transaction ends; `use` refuses from then on */
  end(): void;
}

export function guardClient(client: pg.ClientBase): Guard {
  const sql = sqlOver(client);
  let live = true;
  return {
    use() {
      if (!live) throw new TransactionMisuseError('a relay store transaction was used after it ended');
      return sql;
    },
    end() { live = false; },
  };
}

export function relayReader(use: UsePg, where: string): RelayReader {
  return {
    meta: metaReader(use, where),
    enrolments: enrolmentReader(use),
    hostRecords: hostRecordReader(use),
    items: itemReader(use),
    usage: usageReader(use),
    accounts: accountReader(use),
  };
}

/** `locks` are the group transaction's, shared by its members. */
export function relayTransactor(use: UsePg, where: string, locks: TargetLocks): RelayTransactor {
  return {
    meta: metaTransactor(use, where),
    enrolments: enrolmentTransactor(use),
    hostRecords: hostRecordTransactor(use),
    items: itemTransactor(use, locks),
    usage: usageTransactor(use, locks),
    accounts: accountTransactor(use),
    challenges: challengeTransactor(use),
    rateWindows: rateWindowTransactor(use),
  };
}
