// The PostgreSQL comparison of issue 7: a throwaway cluster in a temporary directory
// (synchronous_commit=on, fsync on), single-row `INSERT … ON CONFLICT DO NOTHING` on the same dedup
// key as the relay (sender, item_id, target) with a 1 KiB payload, one commit per row, from N
// concurrent psql sessions. Skipped, saying why, when PostgreSQL is not installed. And the relay's
// PostgreSQL setups: relay processes on a throwaway cluster of their own.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findPostgresTool, startPostgresCluster } from '../test/helpers/postgres-cluster.ts';
import { BENCH_SETTINGS, processAndChildrenCpuMs, startRelayChild, type RelayChild } from './relay-child.ts';

export type PostgresResult = { available: false; reason: string } | { available: true; version: string; insertsPerSecond: Record<number, number> };

function runPsqlSessions(psql: string, url: string, scripts: string[]): Promise<number> {
  const start = performance.now();
  return Promise.all(
    scripts.map(
      (file) =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(psql, ['-d', url, '-q', '-v', 'ON_ERROR_STOP=1', '-f', file], { stdio: ['ignore', 'ignore', 'inherit'] });
          child.on('error', reject);
          child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql exited with ${code}`))));
        }),
    ),
  ).then(() => (performance.now() - start) / 1000);
}

export async function measurePostgres(dir: string, concurrencies: number[], insertsPerLevel: number): Promise<PostgresResult> {
  const psql = findPostgresTool('psql');
  if (psql === null) return { available: false, reason: 'psql is not installed' };
  const start = await startPostgresCluster({ settings: { full_page_writes: 'on' } });
  if (!start.available) return start;
  const { cluster } = start;
  const url = cluster.url();
  const root = join(dir, 'pg');
  mkdirSync(root, { recursive: true });
  try {
    const run = (sql: string): void => {
      execFileSync(psql, ['-d', url, '-q', '-c', sql]);
    };
    run('CREATE TABLE items (sender text, item_id text, target text, wire bytea NOT NULL, PRIMARY KEY (sender, item_id, target))');
    const wireHex = Buffer.alloc(1024, 0x61).toString('hex');
    const insertsPerSecond: Record<number, number> = {};
    for (const sessions of concurrencies) {
      const perSession = Math.ceil(insertsPerLevel / sessions);
      const scripts = Array.from({ length: sessions }, (_, s) => {
        const file = join(root, `c${sessions}-s${s}.sql`);
        const lines = Array.from(
          { length: perSession },
          (_, i) => `INSERT INTO items VALUES ('sender-${s}', 'c${sessions}-${i}', 'target', '\\x${wireHex}') ON CONFLICT DO NOTHING;`,
        );
        writeFileSync(file, lines.join('\n'));
        return file;
      });
      const seconds = await runPsqlSessions(psql, url, scripts);
      insertsPerSecond[sessions] = (perSession * sessions) / seconds;
    }
    return { available: true, version: cluster.version, insertsPerSecond };
  } finally {
    await cluster.stop();
  }
}

/** The relay with `processes` relay processes (`--workers`) on a throwaway PostgreSQL cluster of its own, stopped with the relay. */
export async function startRelayOnPostgres(dir: string, processes: number): Promise<RelayChild> {
  const start = await startPostgresCluster();
  if (!start.available) throw new Error(start.reason);
  try {
    const relay = await startRelayChild(dir, BENCH_SETTINGS, processes, ['--store', await start.cluster.createDatabase('relay')]);
    return {
      ...relay,
      serverCpuMs: () => processAndChildrenCpuMs(start.cluster.pid),
      async stop() {
        await relay.stop();
        await start.cluster.stop();
      },
    };
  } catch (error) {
    await start.cluster.stop();
    throw error;
  }
}
