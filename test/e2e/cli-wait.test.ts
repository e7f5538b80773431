// `inbox --wait` and `watch` through the real CLI: they block on the store, not on the daemon, so a
// daemon SIGKILLed and restarted while they wait changes nothing, and each message is told once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, spawnCli, type Child } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost, pairCli, startCliDaemon } from './host-helpers.ts';
import { eventually } from './mcp-helpers.ts';

interface Line {
  id: string;
  from: string;
  subject: string;
  trust: string;
}

function cliChild(env: NodeJS.ProcessEnv, args: string[]): Child {
  return spawnCli(args, { env: { ...process.env, ...env } });
}

function lines(child: Child): Line[] {
  return child
    .stdout()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

test('inbox --wait and watch keep waiting through a daemon restart and report the mail once', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const beta = await newCliHost('beta', ['bob']);
  await startCliDaemon(alpha);
  const firstDaemon = await startCliDaemon(beta);
  await pairCli(alpha, beta);
  const alphaFp = (await cliJson<{ fingerprint: string }>(alpha, ['whoami'])).fingerprint;

  const none = await runCli(['inbox', '--agent', 'bob', '--wait', '--timeout', '1', '--json'], beta.env);
  assert.equal(none.code, 7, 'no mail: exit 7 at the timeout');
  assert.deepEqual(JSON.parse(none.stdout) as { timed_out: boolean; messages: Line[] }, { timed_out: true, messages: [], total: 0, more: false, next: null });

  const waiting = cliChild(beta.env, ['inbox', '--agent', 'bob', '--wait', '--json']);
  const watching = cliChild(beta.env, ['watch', '--agent', 'bob', '--json']);
  await eventually(
    'watch is ready',
    async () => watching.stderr(),
    (err) => err.includes('watching the mail of bob@beta'),
  );

  firstDaemon.kill('SIGKILL');
  await firstDaemon.exited;
  await startCliDaemon(beta);
  assert.equal(waiting.process.exitCode, null, 'inbox --wait is still waiting');
  assert.equal(watching.process.exitCode, null, 'watch is still watching');

  const m1 = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 'first', '--body', 'one'])).trim();
  assert.equal(await waiting.exited, 0);
  const listed = (JSON.parse(waiting.stdout()) as { messages: Line[] }).messages;
  assert.deepEqual(
    listed.map((m) => [m.id, m.from, m.trust]),
    [[m1, 'ann@alpha', `signed by paired host alpha (${alphaFp})`]],
  );

  const m2 = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 'second', '--body', 'two'])).trim();
  await eventually(
    'watch reports both',
    async () => lines(watching),
    (l) => l.length >= 2,
  );
  assert.deepEqual(
    lines(watching).map((m) => [m.id, m.subject]),
    [
      [m1, 'first'],
      [m2, 'second'],
    ],
    'each message once, in order',
  );
  assert.match(await cli(beta, ['read', m1, '--agent', 'bob']), new RegExp(`^From: ann@alpha\nVouched for by: signed by paired host alpha \\(${alphaFp}\\)\n`));
  watching.kill('SIGTERM');
  assert.equal(await watching.exited, 0);
  assert.equal(watching.stderr().trim(), 'watching the mail of bob@beta');
});
