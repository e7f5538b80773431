// The readers and transactors handed to one read's or one transaction's fn over its PostgreSQL
// connection (guarded by the store, guard.ts).
import type { RelayReader, RelayTransactor } from '../relay-store.ts';
import { accountReader, accountTransactor } from './accounts.ts';
import { enrolmentReader, enrolmentTransactor } from './enrolments.ts';
import { hostRecordReader, hostRecordTransactor } from './host-records.ts';
import { itemReader, itemTransactor } from './items.ts';
import type { TargetLocks } from './locks.ts';
import { metaReader, metaTransactor } from './meta.ts';
import { ReadAhead } from './read-ahead.ts';
import { challengeTransactor, rateWindowTransactor } from './shared-state.ts';
import type { UsePg } from './sql.ts';
import { usageReader, usageTransactor } from './usage.ts';

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

/** `locks` are the group transaction's, shared by its members; reads kept ahead are this transaction's own. */
export function relayTransactor(use: UsePg, where: string, locks: TargetLocks): RelayTransactor {
  const readAhead = new ReadAhead();
  return {
    meta: metaTransactor(use, where),
    enrolments: enrolmentTransactor(use, locks, readAhead),
    hostRecords: hostRecordTransactor(use, readAhead),
    items: itemTransactor(use, locks, readAhead),
    usage: usageTransactor(use, locks, readAhead),
    accounts: accountTransactor(use),
    challenges: challengeTransactor(use),
    rateWindows: rateWindowTransactor(use),
  };
}
