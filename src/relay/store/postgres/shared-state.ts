// The PostgreSQL side of shared-state.ts (schema 2): open enrolment challenges and request windows,
// shared by every relay process on the database. A rate window is one upsert: its row lock orders
// concurrent counts, so a limit holds exactly across processes. The open-challenge cap counts live
// rows without a lock: processes opening challenges at the same moment may pass it by as many.
import type { ChallengeTransactor, RateWindowTransactor } from '../shared-state.ts';
import { assertInteger, int, text } from '../sql/columns.ts';
import type { UsePg } from './sql.ts';

export function challengeTransactor(use: UsePg): ChallengeTransactor {
  return {
    async remove(pubkey) {
      const row = await use().row('DELETE FROM challenges WHERE pubkey = $1 RETURNING challenge, expires_at', [pubkey]);
      return row === undefined ? null : { challenge: text(row, 'challenge'), expiresAt: int(row, 'expires_at') };
    },
    async insert(pubkey, challenge, expiresAt) {
      assertInteger(expiresAt, 'expiresAt');
      await use().run('INSERT INTO challenges (pubkey, challenge, expires_at) VALUES ($1, $2, $3)', [pubkey, challenge, expiresAt]);
    },
    async countLive(nowMs) {
      assertInteger(nowMs, 'nowMs');
      const row = await use().row('SELECT count(*) AS n FROM challenges WHERE expires_at > $1', [nowMs]);
      return row === undefined ? 0 : int(row, 'n');
    },
    async deleteExpired(nowMs, limit) {
      assertInteger(nowMs, 'nowMs');
      assertInteger(limit, 'limit');
      return use().run(`DELETE FROM challenges WHERE pubkey IN (SELECT pubkey FROM challenges WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`, [
        nowMs,
        limit,
      ]);
    },
  };
}

export function rateWindowTransactor(use: UsePg): RateWindowTransactor {
  return {
    async count(key, nowMs, windowMs) {
      assertInteger(nowMs, 'nowMs');
      assertInteger(windowMs, 'windowMs');
      const restarts = '$2::bigint - rate_windows.window_start >= $3::bigint OR $2::bigint < rate_windows.window_start';
      const row = await use().row(
        `INSERT INTO rate_windows (key, window_start, count) VALUES ($1, $2, 1)
          ON CONFLICT (key) DO UPDATE SET
            count = CASE WHEN ${restarts} THEN 1 ELSE rate_windows.count + 1 END,
            window_start = CASE WHEN ${restarts} THEN $2 ELSE rate_windows.window_start END
          RETURNING count`,
        [key, nowMs, windowMs],
      );
      return row === undefined ? 0 : int(row, 'count');
    },
    async deleteEnded(nowMs, windowMs, limit) {
      assertInteger(nowMs, 'nowMs');
      assertInteger(limit, 'limit');
      return use().run(`DELETE FROM rate_windows WHERE key IN (SELECT key FROM rate_windows WHERE window_start <= $1 LIMIT $2)`, [nowMs - windowMs, limit]);
    },
  };
}
