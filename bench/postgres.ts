// The PostgreSQL comparison of issue 7: a throwaway cluster in a temporary directory
// (synchronous_commit=on, fsync on), single-row `INSERT … ON CONFLICT DO NOTHING` on the same dedup
// key as the relay (sender, item_id, target) with a 1 KiB payload, one commit per row, from N
// concurrent psql sessions. Skipped, saying why, when PostgreSQL is not installed.
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';

export type PostgresResult = { available: false; reason: string } | { available: true; version: string; insertsPerSecond: Record<number, number> };

const PORT = 54_329;

function findBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  for (const version of readdirSync(root).sort().reverse()) {
    const bin = join(root, version, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl')) && existsSync(join(bin, 'psql'))) return bin;
  }
  return null;
}

/** initdb and pg_ctl refuse to run as root: run them as the postgres user then. */
function asClusterOwner(command: string, args: string[]): void {
  const cmd = userInfo().uid === 0 ? ['runuser', '-u', 'postgres', '--', command, ...args] : [command, ...args];
  execFileSync(cmd[0] as string, cmd.slice(1), { stdio: 'ignore' });
}

function runPsqlSessions(bin: string, socketDir: string, scripts: string[]): Promise<number> {
  const start = performance.now();
  return Promise.all(scripts.map((file) => new Promise<void>((resolve, reject) => {
    const child = spawn(join(bin, 'psql'), ['-h', socketDir, '-p', String(PORT), '-U', 'postgres', '-q', '-v', 'ON_ERROR_STOP=1', '-f', file], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql exited with ${code}`))));
  }))).then(() => (performance.now() - start) / 1000);
}

export async function measurePostgres(dir: string, concurrencies: number[], insertsPerLevel: number): Promise<PostgresResult> {
  const bin = findBin();
  if (bin === null) return { available: false, reason: 'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin with initdb, pg_ctl, psql)' };
  const root = join(dir, 'pg');
  const data = join(root, 'data');
  const socketDir = join(root, 'sock');
  mkdirSync(socketDir, { recursive: true });
  if (userInfo().uid === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    for (const path of [dir, root, socketDir]) chownSync(path, uid, gid);
  }
  const version = execFileSync(join(bin, 'postgres'), ['--version']).toString().trim();
  try {
    asClusterOwner(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    const options = `-k ${socketDir} -p ${PORT} -c listen_addresses= -c synchronous_commit=on -c fsync=on -c full_page_writes=on`;
    asClusterOwner(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-w', '-l', join(root, 'log'), 'start']);
  } catch (error) {
    return { available: false, reason: `PostgreSQL is installed but a throwaway cluster did not start: ${(error as Error).message.split('\n')[0]}` };
  }
  try {
    const psql = (sql: string): void => { execFileSync(join(bin, 'psql'), ['-h', socketDir, '-p', String(PORT), '-U', 'postgres', '-q', '-c', sql]); };
    psql('CREATE TABLE items (sender text, item_id text, target text, wire bytea NOT NULL, PRIMARY KEY (sender, item_id, target))');
    const wireHex = Buffer.alloc(1024, 0x61).toString('hex');
    const insertsPerSecond: Record<number, number> = {};
    for (const sessions of concurrencies) {
      const perSession = Math.ceil(insertsPerLevel / sessions);
      const scripts = Array.from({ length: sessions }, (_, s) => {
        const file = join(root, `c${sessions}-s${s}.sql`);
        const lines = Array.from({ length: perSession }, (_, i) =>
          `INSERT INTO items VALUES ('sender-${s}', 'c${sessions}-${i}', 'target', '\\x${wireHex}') ON CONFLICT DO NOTHING;`);
        writeFileSync(file, lines.join('\n'));
        return file;
      });
      const seconds = await runPsqlSessions(bin, socketDir, scripts);
      insertsPerSecond[sessions] = (perSession * sessions) / seconds;
    }
    return { available: true, version, insertsPerSecond };
  } finally {
    asClusterOwner(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
  }
}
