// The readers and transactors handed to one read's or one transaction's fn. Every method refuses
// once that read or transaction ended, so a promise that escapes fn cannot touch the store outside
// it (the PDS transactor's guard).
import type { MetaReader, MetaTransactor, RelayReader, RelayTransactor } from '../relay-store.ts';
import { assertInteger } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';
import { enrolmentReader, enrolmentTransactor } from './enrolments.ts';
import { hostRecordReader, hostRecordTransactor } from './host-records.ts';
import { accountReader, accountTransactor } from './hosted.ts';
import { itemReader, itemTransactor } from './items.ts';
import { readMeta, writeMeta } from './meta.ts';
import { appendOpsLog, readOpsLog } from './ops-log.ts';
import { challengeTransactor, rateWindowTransactor } from './shared-state.ts';
import { usageReader } from './usage.ts';
import { META_EPOCH, META_HEARTBEAT_AT } from '../sql/names.ts';

/** `where` names the store in the error when its meta is missing. */
function metaReader(use: UseSql, where: string): MetaReader {
  return {
    async get() {
      return readMeta(use(), where);
    },
    async opsLog(limit) {
      return readOpsLog(use(), limit);
    },
  };
}

function metaTransactor(use: UseSql, where: string): MetaTransactor {
  return {
    ...metaReader(use, where),
    async setEpoch(epoch) {
      writeMeta(use(), META_EPOCH, epoch);
    },
    async writeHeartbeat(atMs) {
      assertInteger(atMs, 'atMs');
      writeMeta(use(), META_HEARTBEAT_AT, String(atMs));
    },
    async appendOpsLog(entry) {
      appendOpsLog(use(), entry);
    },
  };
}

export function relayReader(use: UseSql, where: string): RelayReader {
  return {
    meta: metaReader(use, where),
    enrolments: enrolmentReader(use),
    hostRecords: hostRecordReader(use),
    items: itemReader(use),
    usage: usageReader(use),
    accounts: accountReader(use),
  };
}

export function relayTransactor(use: UseSql, where: string): RelayTransactor {
  return {
    meta: metaTransactor(use, where),
    enrolments: enrolmentTransactor(use),
    hostRecords: hostRecordTransactor(use),
    items: itemTransactor(use),
    usage: usageReader(use),
    accounts: accountTransactor(use),
    challenges: challengeTransactor(use),
    rateWindows: rateWindowTransactor(use),
  };
}
