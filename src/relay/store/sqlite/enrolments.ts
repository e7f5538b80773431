// Enrolments (design §2): hosts by key, names as labels, and the live-enrolment counter that
// putEnrolment keeps exact (a revocation is a live key leaving).
import type { SQLTagStore } from 'node:sqlite';
import type { Enrolment, EnrolmentReader, EnrolmentTransactor } from '../relay-store.ts';
import { assertInteger, int } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';
import { LIVE_COUNTER } from '../sql/names.ts';
import { enrolmentFrom } from '../sql/row-records.ts';

export function getEnrolment(sql: SQLTagStore, hostPubkey: string): Enrolment | null {
  const row = sql.get`SELECT * FROM enrolments WHERE host_pubkey = ${hostPubkey}`;
  return row === undefined ? null : enrolmentFrom(row);
}

export function liveEnrolmentsByName(sql: SQLTagStore, hostName: string, limit: number): Enrolment[] {
  assertInteger(limit, 'limit');
  return sql.all`SELECT * FROM enrolments WHERE revoked_at IS NULL AND lower(host_name) = lower(${hostName})
                 ORDER BY enrolled_at, host_pubkey LIMIT ${limit}`.map(enrolmentFrom);
}

export function nameTakenInAccount(sql: SQLTagStore, account: string, hostName: string, exceptPubkey: string): boolean {
  return (
    sql.get`SELECT 1 AS taken FROM enrolments
                 WHERE revoked_at IS NULL AND account = ${account} AND lower(host_name) = lower(${hostName})
                   AND host_pubkey <> ${exceptPubkey} LIMIT 1` !== undefined
  );
}

export function countLiveEnrolments(sql: SQLTagStore): number {
  const row = sql.get`SELECT value FROM counters WHERE name = ${LIVE_COUNTER}`;
  return row === undefined ? 0 : int(row, 'value');
}

export function putEnrolment(sql: SQLTagStore, e: Enrolment): void {
  const before = getEnrolment(sql, e.hostPubkey);
  sql.run`INSERT INTO enrolments (host_pubkey, host_name, owner_fp, account, org, authorized_by, enrolled_at, revoked_at)
          VALUES (${e.hostPubkey}, ${e.hostName}, ${e.ownerFp}, ${e.account}, ${e.org}, ${e.authorizedBy}, ${e.enrolledAt}, ${e.revokedAt})
          ON CONFLICT (host_pubkey) DO UPDATE SET host_name = excluded.host_name, owner_fp = excluded.owner_fp,
            account = excluded.account, org = excluded.org, authorized_by = excluded.authorized_by,
            enrolled_at = excluded.enrolled_at, revoked_at = excluded.revoked_at`;
  const liveChange = (e.revokedAt === null ? 1 : 0) - (before !== null && before.revokedAt === null ? 1 : 0);
  if (liveChange !== 0) sql.run`UPDATE counters SET value = value + ${liveChange} WHERE name = ${LIVE_COUNTER}`;
}

export function enrolmentReader(use: UseSql): EnrolmentReader {
  return {
    async get(hostPubkey) {
      return getEnrolment(use(), hostPubkey);
    },
    async liveByName(hostName, limit) {
      return liveEnrolmentsByName(use(), hostName, limit);
    },
    async nameTakenInAccount(account, hostName, exceptPubkey) {
      return nameTakenInAccount(use(), account, hostName, exceptPubkey);
    },
    async countLive() {
      return countLiveEnrolments(use());
    },
  };
}

export function enrolmentTransactor(use: UseSql): EnrolmentTransactor {
  return {
    ...enrolmentReader(use),
    async put(enrolment) {
      putEnrolment(use(), enrolment);
    },
  };
}
