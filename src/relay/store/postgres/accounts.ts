// The accounts domain in PostgreSQL (design §8): cloud keys and the revocation deny-list.
import type { AccountReader, AccountTransactor, DenyEntry } from '../accounts.ts';
import { assertInteger, int, text } from '../sql/columns.ts';
import type { Sql, UsePg } from './sql.ts';
import { denyFrom } from '../sql/row-records.ts';

/** Expired deny rows removed per write, so one write never turns into a long delete. */
const DENY_SWEEP_BATCH = 1000;

async function putDenyEntries(sql: Sql, entries: DenyEntry[], nowMs: number): Promise<void> {
  assertInteger(nowMs, 'nowMs');
  await sql.run(`DELETE FROM deny_list WHERE (kind, value) IN (SELECT kind, value FROM deny_list WHERE until_ms <= $1 LIMIT $2)`, [nowMs, DENY_SWEEP_BATCH]);
  for (const entry of entries) {
    assertInteger(entry.untilMs, 'untilMs');
    await sql.run(
      `INSERT INTO deny_list (kind, value, reason, until_ms, added_at) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (kind, value) DO UPDATE SET reason = excluded.reason,
          until_ms = greatest(deny_list.until_ms, excluded.until_ms), added_at = excluded.added_at`,
      [entry.kind, entry.value, entry.reason, entry.untilMs, entry.addedAt],
    );
  }
}

export function accountReader(use: UsePg): AccountReader {
  return {
    async cloudKeyOwner(jkt) {
      const row = await use().row('SELECT host_pubkey FROM cloud_keys WHERE jkt = $1', [jkt]);
      return row === undefined ? null : text(row, 'host_pubkey');
    },
    async cloudKeyOf(hostPubkey) {
      const row = await use().row('SELECT jkt FROM cloud_keys WHERE host_pubkey = $1', [hostPubkey]);
      return row === undefined ? null : text(row, 'jkt');
    },
    async findDenyEntry(hostFp, clientId, nowMs) {
      assertInteger(nowMs, 'nowMs');
      const row = await use().row(
        `SELECT * FROM deny_list WHERE until_ms > $1
          AND ((kind = 'host_fp' AND value = $2) OR (kind = 'client_id' AND $3::text IS NOT NULL AND value = $3))
          ORDER BY until_ms DESC LIMIT 1`,
        [nowMs, hostFp, clientId],
      );
      return row === undefined ? null : denyFrom(row);
    },
    async countLiveDenyEntries(nowMs) {
      assertInteger(nowMs, 'nowMs');
      const row = await use().row('SELECT count(*) AS n FROM deny_list WHERE until_ms > $1', [nowMs]);
      return row === undefined ? 0 : int(row, 'n');
    },
  };
}

export function accountTransactor(use: UsePg): AccountTransactor {
  return {
    ...accountReader(use),
    async bindCloudKey(hostPubkey, jkt, nowMs) {
      assertInteger(nowMs, 'nowMs');
      await use().run('DELETE FROM cloud_keys WHERE host_pubkey = $1 OR jkt = $2', [hostPubkey, jkt]);
      await use().run('INSERT INTO cloud_keys (host_pubkey, jkt, bound_at) VALUES ($1, $2, $3)', [hostPubkey, jkt, nowMs]);
    },
    async putDenyEntries(entries, nowMs) {
      await putDenyEntries(use(), entries, nowMs);
    },
  };
}
