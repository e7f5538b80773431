// The machine's ceilings, measured in the same run as the relay (issue 7): raw node:sqlite inserts
// with the relay's pragmas (WAL, synchronous=FULL), one row per commit and 100 rows per commit, and
// Ed25519 signatures per second with the key code the relay signs accepts with; and the CPU each
// row, signature and verification takes (parts of the floor, floor.ts).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { generateSigningKey, verifySignature } from '../src/protocol/keys.ts';

export interface Ceilings {
  /** commits of one 1 KiB row per second */
  sqliteOneRowPerCommit: number;
  /** rows per second, committed 100 at a time */
  sqliteHundredRowsPerCommit: number;
  /** CPU (user + system ms) per row, committed 100 at a time: one of the floor's parts */
  sqliteHundredRowsCpuMsPerRow: number;
  ed25519SignsPerSecond: number;
  /** CPU ms per Ed25519 signature */
  ed25519SignCpuMs: number;
  /** CPU ms per Ed25519 verification of a hop-sized message */
  ed25519VerifyCpuMs: number;
}

export interface Rate {
  perSecond: number;
  /** CPU (user + system) of this process per unit, ms */
  cpuMsPerUnit: number;
}

/** Runs `step` until `budgetMs` has passed; returns how many units it did per second and the CPU each took. */
export function rate(budgetMs: number, step: () => number): Rate {
  const cpuAtStart = process.cpuUsage();
  const start = performance.now();
  let units = 0;
  while (performance.now() - start < budgetMs) units += step();
  const cpu = process.cpuUsage(cpuAtStart);
  return { perSecond: units / ((performance.now() - start) / 1000), cpuMsPerUnit: (cpu.user + cpu.system) / 1000 / units };
}

function sqliteRate(dir: string, rowsPerCommit: number, budgetMs: number): Rate {
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
  const signature = key.sign(message);
  const hundredRows = sqliteRate(dir, 100, budgetMs);
  const signs = rate(budgetMs, () => {
    key.sign(message);
    return 1;
  });
  return {
    sqliteOneRowPerCommit: sqliteRate(dir, 1, budgetMs).perSecond,
    sqliteHundredRowsPerCommit: hundredRows.perSecond,
    sqliteHundredRowsCpuMsPerRow: hundredRows.cpuMsPerUnit,
    ed25519SignsPerSecond: signs.perSecond,
    ed25519SignCpuMs: signs.cpuMsPerUnit,
    ed25519VerifyCpuMs: rate(budgetMs, () => {
      verifySignature(key.publicKey, message, signature);
      return 1;
    }).cpuMsPerUnit,
  };
}
