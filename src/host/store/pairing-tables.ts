// Pairing tokens (only their scrypt key) and rotation records.
import type { Database } from './database.ts';

export interface PairTokenRow {
  id: number;
  token_key: string;
  state: 'live' | 'used' | 'burned' | 'replaced';
  failures: number;
  expires_at: number;
  created_at: number;
}

export interface RotationRow {
  new_pub: string;
  old_pub: string;
  host: string;
  origin: 'own' | 'peer';
  record: string;
  at: number;
}

export class PairTokensTable {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Stores a new token key; any earlier live token stops working (one live token at a time). */
  create(tokenKey: string, expiresAtMs: number, nowMs: number): void {
    this.#db.transaction(() => {
      this.#db.run("UPDATE pair_tokens SET state = 'replaced' WHERE state = 'live'");
      this.#db.run("INSERT INTO pair_tokens (token_key, state, expires_at, created_at) VALUES (?, 'live', ?, ?)", tokenKey, expiresAtMs, nowMs);
    });
  }

  /** The live, unexpired token, if any. */
  live(nowMs: number): PairTokenRow | undefined {
    return this.#db.get<PairTokenRow>("SELECT * FROM pair_tokens WHERE state = 'live' AND expires_at > ? ORDER BY id DESC LIMIT 1", nowMs);
  }

  /** Counts a wrong MAC; the token burns at `maxFailures`. Returns the failures so far. */
  noteFailure(id: number, maxFailures: number): number {
    this.#db.run(
      "UPDATE pair_tokens SET failures = failures + 1, state = CASE WHEN failures + 1 >= ? THEN 'burned' ELSE state END WHERE id = ?",
      maxFailures,
      id,
    );
    return this.#db.get<{ failures: number }>('SELECT failures FROM pair_tokens WHERE id = ?', id)?.failures ?? maxFailures;
  }

  markUsed(id: number): boolean {
    return this.#db.run("UPDATE pair_tokens SET state = 'used' WHERE id = ? AND state = 'live'", id).changes > 0;
  }

  get(id: number): PairTokenRow | undefined {
    return this.#db.get<PairTokenRow>('SELECT * FROM pair_tokens WHERE id = ?', id);
  }
}

export class RotationsTable {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** Records a rotation once; false when it was already there. */
  insert(r: RotationRow): boolean {
    return (
      this.#db.run(
        'INSERT OR IGNORE INTO rotations (new_pub, old_pub, host, origin, record, at) VALUES (?, ?, ?, ?, ?, ?)',
        r.new_pub,
        r.old_pub,
        r.host,
        r.origin,
        r.record,
        r.at,
      ).changes > 0
    );
  }

  get(newPub: string): RotationRow | undefined {
    return this.#db.get<RotationRow>('SELECT * FROM rotations WHERE new_pub = ?', newPub);
  }

  own(): RotationRow[] {
    return this.#db.all<RotationRow>("SELECT * FROM rotations WHERE origin = 'own' ORDER BY at");
  }
}
