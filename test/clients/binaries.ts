// The real agent clients the real-client tests drive, installed only for tests from the pinned
// test/clients/package.json (`npm ci --prefix test/clients`, which .ci/run does). A test that needs
// one and cannot find it skips and says why.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const BIN_DIR = join(import.meta.dirname, 'node_modules', '.bin');

export interface ClientBinary {
  /** absolute path of the client's command */
  path: string;
  /** why tests that need it skip; null when it runs here */
  missing: string | null;
}

function locate(name: string, versionPattern: RegExp): ClientBinary {
  const path = join(BIN_DIR, name);
  if (!existsSync(path)) return { path, missing: `${name} is not installed: run \`npm ci --prefix test/clients\`` };
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 20_000 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  if (r.status !== 0 || !versionPattern.test(out)) return { path, missing: `${name} --version did not run here: ${out.slice(0, 200) || String(r.error)}` };
  return { path, missing: null };
}

export const CLAUDE = locate('claude', /Claude Code/);
export const CODEX = locate('codex', /codex-cli/);
