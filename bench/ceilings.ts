// The machine's ceilings, measured in the same run as the relay (issue 7): raw node:sqlite inserts
// with the relay's pragmas (WAL, synchronous=FULL), one row per commit and 100 rows per commit, and
// Ed25519 signatures per second with the key code the relay signs accepts with.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { generateSigningKey } from '../src/protocol/keys.ts';

export interface Ceilings {
  /** commits of one 1 KiB row per second */
  sqliteOneRowPerCommit: number;
  /** rows per second, committed 100 at a time */
  sqliteHundredRowsPerCommit: number;
  ed25519SignsPerSecond: number;
}

/** Runs `step` until `budgetMs` has passed; returns how many units it did per second. */
function rate(budgetMs: number, step: () => number): number {
  const start = performance.now();
  let units = 0;
  while (performance.now() - start < budgetMs) units += step();
  return units / ((performance.now() - start) / 1000);
}

function sqliteRate(dir: string, rowsPerCommit: number, budgetMs: number): number {
  const db = new DatabaseSync(join(dir, `ceiling-${rowsPerCommit}.db`));
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE, wire BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO t (k, wire) VALUES (?, ?)');
  const wire = randomBytes(1024);
  let n = 0;
  const result = rate(budgetMs, () => {
    db.exec('BEGIN IMMEDIATE');
    for (let i = 0; i < rowsPerCommit; i += 1) insert.run(`k${n++}`, wire);
    db.exec('COMMIT');
    return rowsPerCommit;
  });
  db.close();
  return result;
}

export function measureCeilings(dir: string, budgetMs: number): Ceilings {
  const key = generateSigningKey();
  const message = randomBytes(150).toString('base64');
  return {
    sqliteOneRowPerCommit: sqliteRate(dir, 1, budgetMs),
    sqliteHundredRowsPerCommit: sqliteRate(dir, 100, budgetMs),
    ed25519SignsPerSecond: rate(budgetMs, () => { key.sign(message); return 1; }),
  };
}
