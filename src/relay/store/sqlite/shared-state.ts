// The SQLite side of shared-state.ts (schema 6): the challenges and rate_windows tables.
import type { ChallengeTransactor, RateWindowTransactor } from '../shared-state.ts';
import { assertInteger, int, text } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';

export function challengeTransactor(use: UseSql): ChallengeTransactor {
  return {
    async remove(pubkey) {
      const row = use().get`DELETE FROM challenges WHERE pubkey = ${pubkey} RETURNING challenge, expires_at`;
      return row === undefined ? null : { challenge: text(row, 'challenge'), expiresAt: int(row, 'expires_at') };
    },
    async insert(pubkey, challenge, expiresAt) {
      assertInteger(expiresAt, 'expiresAt');
      use().run`INSERT INTO challenges (pubkey, challenge, expires_at) VALUES (${pubkey}, ${challenge}, ${expiresAt})`;
    },
    async countLive(nowMs) {
      assertInteger(nowMs, 'nowMs');
      return int(use().get`SELECT count(*) AS n FROM challenges WHERE expires_at > ${nowMs}` ?? { n: 0 }, 'n');
    },
    async deleteExpired(nowMs, limit) {
      assertInteger(nowMs, 'nowMs');
      const result = use()
        .run`DELETE FROM challenges WHERE pubkey IN (SELECT pubkey FROM challenges WHERE expires_at <= ${nowMs} ORDER BY expires_at LIMIT ${limit})`;
      return Number(result.changes);
    },
  };
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
