// The CLI's contract with people and programs: one exit-code table, `{"error","code"}` on stdout
// under --json, --json on every command, --version; refused commands leave the home untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.ts';
import { EXIT_CODES } from '../../src/cli/exit-codes.ts';
import { closedPort } from '../helpers/ports.ts';
import { REPO_ROOT, runCli, spawnCli, tempDir } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, homeSnapshot, newCliHost } from './host-helpers.ts';

type Result = Awaited<ReturnType<typeof runCli>>;

/** A refusal under --json: exit code, exactly one JSON object on stdout, nothing on stderr. */
function assertJsonFailure(r: Result, code: keyof typeof EXIT_CODES, error: string | RegExp): void {
  assert.equal(r.code, EXIT_CODES[code], `exit ${r.code}: ${r.stdout}${r.stderr}`);
  assert.equal(r.stderr, '');
  const body = JSON.parse(r.stdout) as { error: string; code: string };
  assert.deepEqual(Object.keys(body), ['error', 'code']);
  assert.equal(body.code, code);
  if (typeof error === 'string') assert.equal(body.error, error);
  else assert.match(body.error, error);
}

function leafCommands(command: Command, path: string[] = []): Array<{ path: string; command: Command }> {
  if (command.commands.length === 0) return [{ path: path.join(' '), command }];
  // a group that has its own action (peers, agents) is itself a command
  const self = (command as unknown as { _actionHandler: unknown })._actionHandler === null ? [] : [{ path: path.join(' '), command }];
  return [...self, ...command.commands.flatMap((c) => leafCommands(c, [...path, c.name()]))];
}

test('every command takes --json', async () => {
  const missing = leafCommands(await buildProgram())
    .filter(({ command }) => !command.options.some((o) => o.long === '--json'))
    .map((c) => c.path);
  assert.deepEqual(missing, []);
});

test('--version prints the package version (JSON with --json); --help names MBX_HOME and the exit codes', async () => {
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const r = await runCli(['--version']);
  assert.deepEqual([r.code, r.stdout, r.stderr], [0, `${version}\n`, '']);
  for (const argv of [
    ['--version', '--json'],
    ['--json', '-V'],
  ]) {
    const json = await runCli(argv);
    assert.deepEqual([json.code, JSON.parse(json.stdout), json.stderr], [0, { version }, ''], argv.join(' '));
  }
  const help = await runCli(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /MBX_HOME/);
  assert.match(help.stdout, /Exit codes: 0 ok, 1 failure, 2 usage, 3 not found/);
});

test('usage errors exit 2, in text and as JSON', async () => {
  const env = { MBX_HOME: join(tempDir(), 'home') };
  const text = await runCli(['inbox'], env);
  assert.deepEqual([text.code, text.stdout, text.stderr], [2, '', "agentmbx: required option '--agent <name>' not specified\n"]);
  assertJsonFailure(await runCli(['inbox', '--json'], env), 'USAGE', "required option '--agent <name>' not specified");
  assertJsonFailure(await runCli(['nosuch', '--json'], env), 'USAGE', /unknown command 'nosuch'/);
  assertJsonFailure(await runCli(['pair', '--ttl', 'soon', '--json'], env), 'USAGE', /bad duration "soon"/);
});

test('each failure has its exit code and JSON code, and leaves the home as it was', { timeout: E2E_TIMEOUT_MS }, async () => {
  const none = await runCli(['whoami', '--json'], { MBX_HOME: join(tempDir(), 'nothing') });
  assertJsonFailure(none, 'NOT_FOUND', /^no host at .*: run agentmbx init --host <name>, or set MBX_HOME to the home of an existing host$/);

  const alpha = await newCliHost('alpha', ['ann']);
  const before = homeSnapshot(alpha);
  assertJsonFailure(
    await runCli(['read', '01JAAAAAAAAAAAAAAAAAAAAAAA', '--agent', 'ann', '--json'], alpha.env),
    'NOT_FOUND',
    'no message 01JAAAAAAAAAAAAAAAAAAAAAAA for ann: take an id from the inbox',
  );
  assertJsonFailure(await runCli(['inbox', '--agent', 'zed', '--json'], alpha.env), 'NOT_FOUND', 'no agent "zed" on this host');
  assertJsonFailure(await runCli(['peers', 'remove', 'beta', '--json'], alpha.env), 'NOT_FOUND', 'no peer "beta"');
  assertJsonFailure(
    await runCli(['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 's', '--body', 'b', '--json'], alpha.env),
    'NOT_PAIRED',
    'host "beta" is not paired (agentmbx peers)',
  );
  const port = await closedPort();
  assertJsonFailure(
    await runCli(['join', `127.0.0.1:${port}`, 'ABCD-EFGH-JKMN', '--json'], alpha.env),
    'UNREACHABLE',
    `cannot reach http://127.0.0.1:${port}: ECONNREFUSED`,
  );
  assertJsonFailure(await runCli(['init', '--host', 'alpha', '--json'], alpha.env), 'FAILURE', /already holds a host/);
  const textRefusal = await runCli(['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 's', '--body', 'b'], alpha.env);
  assert.deepEqual([textRefusal.code, textRefusal.stdout, textRefusal.stderr], [4, '', 'agentmbx: host "beta" is not paired (agentmbx peers)\n']);
  assert.deepEqual(homeSnapshot(alpha), before, 'no refused command wrote to the home');
});

test('the state-changing commands answer JSON', { timeout: E2E_TIMEOUT_MS }, async () => {
  const home = join(tempDir(), 'home');
  const host = { name: 'gamma', env: { MBX_HOME: home }, daemon: null, url: '', place: { bind: '127.0.0.1' } };
  assert.deepEqual(await cliJson(host, ['init', '--host', 'gamma', '--port', '0']), { host: 'gamma', home });
  assert.deepEqual(await cliJson(host, ['agents', 'add', 'ann']), { agent: 'ann@gamma', added: true, updated: false, role: null, description: null });
  assert.deepEqual(await cliJson(host, ['agents', 'add', 'ann', '--role', 'ops']), {
    agent: 'ann@gamma',
    added: false,
    updated: true,
    role: 'ops',
    description: null,
  });
  const id = (await cli(host, ['send', '--from', 'ann', '--to', 'ann', '--subject', 'hi', '--body', 'b'])).trim();
  assert.deepEqual(await cliJson(host, ['ack', id, '--agent', 'ann']), { id, acked: true, already: false });
  assert.deepEqual(await cliJson(host, ['ack', id, '--agent', 'ann']), { id, acked: true, already: true });
  assert.deepEqual(await cliJson(host, ['relay', 'unset']), { unset: false });
});

test('long-running and operator commands speak JSON too: daemon lines, relay keygen', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', []);
  const daemon = spawnCli(['daemon', '--port', '0', '--bind', '127.0.0.1', '--json'], { env: { ...process.env, ...alpha.env } });
  const ready = JSON.parse(await daemon.waitForLine(/"listening"/)) as { host: string; listening: string };
  assert.equal(ready.host, 'alpha');
  assert.match(ready.listening, /^http:\/\/127\.0\.0\.1:\d+$/);
  daemon.kill('SIGTERM');
  assert.equal(await daemon.exited, 0);
  const keygen = await runCli(['relay', 'keygen', '--json']);
  assert.equal(keygen.code, 0);
  const key = JSON.parse(keygen.stdout) as Record<string, string>;
  assert.deepEqual(Object.keys(key), ['private_key', 'fingerprint']);
  assert.match(key.fingerprint ?? '', /^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/);
  assert.equal(keygen.stderr, '', 'the private key is in the JSON only');
});
