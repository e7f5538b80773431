// The SQLite side of shared-state.ts (schema 6): the challenges and rate_windows tables.
import type { SQLTagStore } from 'node:sqlite';
import type { ChallengeTransactor, RateWindowTransactor } from '../shared-state.ts';
import { assertInteger, int, text } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';
import { EXPIRED_CHALLENGES_PER_OPEN } from '../sql/names.ts';

export function challengeTransactor(use: UseSql): ChallengeTransactor {
  return {
    async open(pubkey, challenge, expiresAt, nowMs, maxOpen) {
      assertInteger(expiresAt, 'expiresAt');
      const sql = use();
      sql.run`DELETE FROM challenges WHERE pubkey = ${pubkey}`;
      deleteExpired(sql, nowMs, EXPIRED_CHALLENGES_PER_OPEN);
      // the table holds at most maxOpen rows (plus expired ones not yet dropped): a bounded count
      const open = int(sql.get`SELECT count(*) AS n FROM challenges WHERE expires_at > ${nowMs}` ?? { n: 0 }, 'n');
      if (open >= maxOpen) return false;
      sql.run`INSERT INTO challenges (pubkey, challenge, expires_at) VALUES (${pubkey}, ${challenge}, ${expiresAt})`;
      return true;
    },
    async take(pubkey, nowMs) {
      assertInteger(nowMs, 'nowMs');
      const row = use().get`DELETE FROM challenges WHERE pubkey = ${pubkey} RETURNING challenge, expires_at`;
      return row !== undefined && int(row, 'expires_at') > nowMs ? text(row, 'challenge') : null;
    },
    async deleteExpired(nowMs, limit) { return deleteExpired(use(), nowMs, limit); },
  };
}

function deleteExpired(sql: SQLTagStore, nowMs: number, limit: number): number {
  assertInteger(nowMs, 'nowMs');
  const result = sql.run`DELETE FROM challenges WHERE pubkey IN (SELECT pubkey FROM challenges WHERE expires_at <= ${nowMs} ORDER BY expires_at LIMIT ${limit})`;
  return Number(result.changes);
}

export function rateWindowTransactor(use: UseSql): RateWindowTransactor {
  return {
    async count(key, nowMs, windowMs) {
      assertInteger(nowMs, 'nowMs');
      // in DO UPDATE, bare column names are the row's values before this statement
      const row = use().get`INSERT INTO rate_windows (key, window_start, count) VALUES (${key}, ${nowMs}, 1)
                            ON CONFLICT (key) DO UPDATE SET
                              count = CASE WHEN ${nowMs} - window_start >= ${windowMs} OR ${nowMs} < window_start THEN 1 ELSE count + 1 END,
                              window_start = CASE WHEN ${nowMs} - window_start >= ${windowMs} OR ${nowMs} < window_start THEN ${nowMs} ELSE window_start END
                            RETURNING count`;
      return int(row ?? { count: 0 }, 'count');
    },
    async deleteEnded(nowMs, windowMs, limit) {
      assertInteger(nowMs, 'nowMs');
      const result = use().run`DELETE FROM rate_windows WHERE key IN (SELECT key FROM rate_windows WHERE window_start <= ${nowMs - windowMs} LIMIT ${limit})`;
      return Number(result.changes);
    },
  };
}
