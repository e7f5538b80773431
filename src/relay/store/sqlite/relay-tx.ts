// The RelayTx handed to one transaction's fn. It refuses every call once its transaction ended, so a
// promise that escapes fn cannot write outside a transaction (the PDS transactor's guard).
import type { SQLTagStore } from 'node:sqlite';
import type { RelayTx } from '../relay-store.ts';
import { assertInteger } from './columns.ts';
import * as enrolments from './enrolments.ts';
import { TransactionMisuseError } from './errors.ts';
import * as hostRecords from './host-records.ts';
import { hostedTx } from './hosted.ts';
import * as items from './items.ts';
import { appendOpsLog, readOpsLog } from './ops-log.ts';
import { META_EPOCH, META_HEARTBEAT_AT, readMeta, writeMeta } from './meta.ts';
import { rotate } from './rotate.ts';
import { challengeTransactor, rateWindowTransactor } from './shared-state.ts';
import * as usage from './usage.ts';

export interface OpenTx {
  tx: RelayTx;
  /** called when the transaction ends (commit or rollback); the tx refuses use from then on */
  end(): void;
}

export function openRelayTx(sql: SQLTagStore, where: string): OpenTx {
  let live = true;
  const use = (): SQLTagStore => {
    if (!live) throw new TransactionMisuseError('a relay store transaction was used after it ended');
    return sql;
  };
  const tx: RelayTx = {
    ...hostedTx(use),
    challenges: challengeTransactor(use),
    rateWindows: rateWindowTransactor(use),
    async meta() { return readMeta(use(), where); },
    async setEpoch(epoch) { writeMeta(use(), META_EPOCH, epoch); },
    async writeHeartbeat(atMs) {
      assertInteger(atMs, 'atMs');
      writeMeta(use(), META_HEARTBEAT_AT, String(atMs));
    },
    async appendOpsLog(entry) { appendOpsLog(use(), entry); },
    async opsLog(limit) { return readOpsLog(use(), limit); },

    async getEnrolment(hostPubkey) { return enrolments.getEnrolment(use(), hostPubkey); },
    async liveEnrolmentsByName(hostName, limit) { return enrolments.liveEnrolmentsByName(use(), hostName, limit); },
    async nameTakenInAccount(account, hostName, exceptPubkey) {
      return enrolments.nameTakenInAccount(use(), account, hostName, exceptPubkey);
    },
    async countLiveEnrolments() { return enrolments.countLiveEnrolments(use()); },
    async putEnrolment(enrolment) { enrolments.putEnrolment(use(), enrolment); },

    async getEncAd(hostPubkey) { return hostRecords.getEncAd(use(), hostPubkey); },
    async putEncAd(ad) { hostRecords.putEncAd(use(), ad); },
    async getSenderList(targetPubkey) { return hostRecords.getSenderList(use(), targetPubkey); },
    async putSenderList(list) { hostRecords.putSenderList(use(), list); },

    async getDedup(senderPubkey, itemId, targetPubkey) { return items.getDedup(use(), senderPubkey, itemId, targetPubkey); },
    async insertItem(item, nowMs) { return items.insertItem(use(), item, nowMs); },

    async queueUsage(targetPubkey) { return usage.queueUsage(use(), targetPubkey); },
    async senderUsage(senderPubkey, targetPubkey) { return usage.senderUsage(use(), senderPubkey, targetPubkey); },
    async accountUsage(account) { return usage.accountUsage(use(), account); },

    async pull(targetPubkey, after, limit, maxBytes) { return items.pull(use(), targetPubkey, after, limit, maxBytes); },
    async headSeq(targetPubkey) { return items.headSeq(use(), targetPubkey); },
    async ackedThrough(targetPubkey) { return items.ackedThrough(use(), targetPubkey); },
    async ack(targetPubkey, through) { return items.ack(use(), targetPubkey, through); },

    async expiredItems(nowMs, limit) { return items.expiredItems(use(), nowMs, limit); },
    async deleteItem(targetPubkey, seq) { items.deleteItem(use(), targetPubkey, seq); },
    async sweepDedup(beforeMs, nowMs, limits) { return items.sweepDedup(use(), beforeMs, nowMs, limits); },

    async rotate(oldPubkey, newPubkey, nowMs) { return rotate(use(), oldPubkey, newPubkey, nowMs); },
  };
  return { tx, end() { live = false; } };
}
