// `agentmbx` on the PATH: `npm install -g` of the clone into a temporary prefix (no registry: a
// local folder is linked), and the pid a shell gets is the CLI's own, so SIGKILL leaves no orphan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, spawnCli, spawnProcess, tempDir } from '../helpers/processes.ts';
import { withDeadline } from '../helpers/wait.ts';
import { E2E_TIMEOUT_MS, cli, newCliHost } from './host-helpers.ts';

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

test('npm install -g --prefix puts a working agentmbx on the PATH, offline', { timeout: E2E_TIMEOUT_MS }, async () => {
  const prefix = tempDir('mbx-prefix-');
  const install = spawnProcess(['npm', 'install', '-g', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, REPO_ROOT], {
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  assert.equal(await install.exited, 0, install.stderr());
  assert.equal(realpathSync(join(prefix, 'lib', 'node_modules', 'agentmbx')), realpathSync(REPO_ROOT), 'the clone is linked, not copied');
  // only the prefix and the system folders on the PATH: no Node of the test run, no node_modules/.bin
  const run = spawnProcess(['sh', '-c', 'agentmbx --version'], { env: { PATH: `${join(prefix, 'bin')}:/usr/bin:/bin`, HOME: prefix } });
  assert.equal(await run.exited, 0, run.stderr());
  assert.equal(run.stdout(), `${VERSION}\n`);
});

test('the pid of agentmbx daemon is the daemon: SIGKILL to it leaves nothing serving and frees the home', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', []);
  const daemon = spawnCli(['daemon', '--port', '0', '--bind', '127.0.0.1'], { env: { ...process.env, ...alpha.env } });
  const url = /listening on (\S+)/.exec(await daemon.waitForLine(/listening on http:\/\//))?.[1] ?? '';
  const pid = daemon.process.pid as number;
  assert.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), /main\.ts\0daemon\0/, "the launcher exec'd the CLI in place");
  process.kill(pid, 'SIGKILL'); // the pid alone, as `kill -9 $!` would: not the group
  assert.equal(await withDeadline('daemon exit', 10_000, daemon.exited), 'SIGKILL');
  await assert.rejects(fetch(`${url}/v1/status`), "nothing answers on the daemon's port");
  const next = spawnCli(['daemon', '--port', '0', '--bind', '127.0.0.1'], { env: { ...process.env, ...alpha.env } });
  await next.waitForLine(/listening on http:\/\//);
  next.kill('SIGTERM');
  assert.equal(await next.exited, 0, next.stdout() + next.stderr());
  assert.match(await cli(alpha, ['whoami']), /^alpha /);
});
