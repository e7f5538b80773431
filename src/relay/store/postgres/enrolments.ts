// Enrolments in PostgreSQL (design §2): hosts by key, names as case-insensitive labels, and the
// live-enrolment counter putEnrolment keeps exact.
import type { Enrolment, EnrolmentReader, EnrolmentTransactor } from '../relay-store.ts';
import { assertInteger, int } from '../sql/columns.ts';
import type { Sql, UsePg } from './sql.ts';
import type { TargetLocks } from './locks.ts';
import { readSenderListAhead } from './host-records.ts';
import { droppingReadsAhead, type ReadAhead } from './read-ahead.ts';
import { LIVE_COUNTER } from '../sql/names.ts';
import { enrolmentFrom } from '../sql/row-records.ts';

async function getEnrolment(sql: Sql, hostPubkey: string): Promise<Enrolment | null> {
  const row = await sql.row('SELECT * FROM enrolments WHERE host_pubkey = $1', [hostPubkey]);
  return row === undefined ? null : enrolmentFrom(row);
}

async function liveEnrolmentsByName(sql: Sql, hostName: string, limit: number): Promise<Enrolment[]> {
  assertInteger(limit, 'limit');
  return (
    await sql.rows(
      `SELECT * FROM enrolments WHERE revoked_at IS NULL AND lower(host_name) = lower($1)
      ORDER BY enrolled_at, host_pubkey LIMIT $2`,
      [hostName, limit],
    )
  ).map(enrolmentFrom);
}

async function nameTakenInAccount(sql: Sql, account: string, hostName: string, exceptPubkey: string): Promise<boolean> {
  return (
    (await sql.row(
      `SELECT 1 AS taken FROM enrolments WHERE revoked_at IS NULL AND account = $1
      AND lower(host_name) = lower($2) AND host_pubkey <> $3 LIMIT 1`,
      [account, hostName, exceptPubkey],
    )) !== undefined
  );
}

async function countLiveEnrolments(sql: Sql): Promise<number> {
  const row = await sql.row('SELECT value FROM counters WHERE name = $1', [LIVE_COUNTER]);
  return row === undefined ? 0 : int(row, 'value');
}

/** Inserts or replaces the row; the counter moves by the live keys it adds or removes (the caller holds the key's lock). */
async function putEnrolment(sql: Sql, e: Enrolment): Promise<void> {
  const before = await sql.row('SELECT revoked_at FROM enrolments WHERE host_pubkey = $1', [e.hostPubkey]);
  await sql.run(
    `INSERT INTO enrolments (host_pubkey, host_name, owner_fp, account, org, authorized_by, enrolled_at, revoked_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (host_pubkey) DO UPDATE SET host_name = excluded.host_name, owner_fp = excluded.owner_fp,
        account = excluded.account, org = excluded.org, authorized_by = excluded.authorized_by,
        enrolled_at = excluded.enrolled_at, revoked_at = excluded.revoked_at`,
    [e.hostPubkey, e.hostName, e.ownerFp, e.account, e.org, e.authorizedBy, e.enrolledAt, e.revokedAt],
  );
  const wasLive = before !== undefined && before['revoked_at'] === null;
  const liveChange = (e.revokedAt === null ? 1 : 0) - (wasLive ? 1 : 0);
  if (liveChange !== 0) await sql.run('UPDATE counters SET value = value + $1 WHERE name = $2', [liveChange, LIVE_COUNTER]);
}

export function enrolmentReader(use: UsePg): EnrolmentReader {
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

/**
 * The key's lock is taken at its first read, so that two processes enrolling one new key (a retry
 * that reached another worker) run their read-then-write one after the other and the live counter
 * moves once; a name's lock likewise before the check that no other key carries it in the account.
 * The key's sender list is read ahead with it (a push's next read).
 */
export function enrolmentTransactor(use: UsePg, locks: TargetLocks, readAhead: ReadAhead): EnrolmentTransactor {
  const writes: Omit<EnrolmentTransactor, keyof EnrolmentReader> = {
    async put(enrolment) {
      locks.host(enrolment.hostPubkey);
      await putEnrolment(use(), enrolment);
    },
  };
  return {
    ...enrolmentReader(use),
    async nameTakenInAccount(account, hostName, exceptPubkey) {
      locks.name(account, hostName);
      return nameTakenInAccount(use(), account, hostName, exceptPubkey);
    },
    async get(hostPubkey) {
      locks.host(hostPubkey);
      const enrolment = getEnrolment(use(), hostPubkey);
      readSenderListAhead(use(), readAhead, hostPubkey);
      return enrolment;
    },
    ...droppingReadsAhead(readAhead, writes),
  };
}
