// The store cannot be silently replaced (issue 25): a home with its keys and config but an emptied,
// a deleted or another host's host.db is refused by every command, the daemon and `agentmbx mcp`
// with exit 6 (the MCP server: with that answer to every call) and a sentence saying what is missing and how to restore it; nothing makes a new
// store in its place. Only init makes a store, and init refuses a home that already has keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, spawnCli } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cli, newCliHost, type CliHost } from './host-helpers.ts';

function storeOf(host: CliHost): string {
  return join(host.env.MBX_HOME as string, 'host.db');
}

const ALL_COMMANDS = [
  ['whoami'],
  ['peers'],
  ['agents'],
  ['inbox', '--agent', 'ann'],
  ['status'],
  ['send', '--from', 'ann', '--to', 'ann', '--subject', 's', '--body', 'b'],
];
const DAEMON = ['daemon', '--port', '0', '--bind', '127.0.0.1'];

/**
 * The daemon, the MCP server and some commands (a few of ALL_COMMANDS, to keep the test short; each
 * case takes others) on `host` exit 6 with `sentence`, doctor names it, and the store file is left as found.
 */
async function refusedEverywhere(host: CliHost, sentence: RegExp, some: string[][]): Promise<void> {
  const commands = [...some, DAEMON];
  const path = storeOf(host);
  const before = existsSync(path) ? statSync(path).size : null;
  const mcp = spawnCli(['mcp', '--agent', 'ann'], { env: { ...process.env, ...host.env } });
  const [doctor, doctorJson, json, ...runs] = await Promise.all([
    runCli(['doctor'], host.env),
    runCli(['doctor', '--json'], host.env),
    runCli(['whoami', '--json'], host.env),
    ...commands.map((args) => runCli(args, host.env)),
  ]);
  runs.forEach((r, i) => {
    const what = commands[i]?.join(' ');
    assert.equal(r.code, 6, `${what}: ${r.stderr}`);
    assert.match(r.stderr, sentence, what);
    assert.equal(r.stderr.split('\n').length, 2, 'one line');
  });
  assert.equal((JSON.parse(json.stdout) as { code: string }).code, 'STORAGE');
  // the MCP server opens no store: it logs the reason and serves it as the answer to every call (a
  // client that gets no handshake shows only "failed to connect"); its stdin here ends at once
  assert.equal(await mcp.exited, 0);
  assert.match(mcp.stderr(), sentence);
  // doctor: a FAIL line with the cause and the fix, the verdict, exit 1; --json has the same check
  assert.equal(doctor.code, 1);
  const failLine = doctor.stdout.split('\n').find((l) => l.startsWith('FAIL  store: ')) ?? '';
  assert.match(failLine, sentence);
  assert.match(doctor.stdout, /\n1 failure\n$/);
  assert.equal(doctorJson.code, 1);
  const report = JSON.parse(doctorJson.stdout) as { ok: boolean; verdict: string; checks: Array<{ check: string; level: string; detail: string }> };
  assert.deepEqual([report.ok, report.verdict], [false, '1 failure']);
  assert.match(report.checks.find((c) => c.check === 'store' && c.level === 'fail')?.detail ?? '', sentence);
  assert.equal(existsSync(path) ? statSync(path).size : null, before, 'no new store was made in its place');
}

test("a home whose host.db is emptied, deleted or another host's is refused by every command, the daemon (exit 6) and mcp", {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const beta = await newCliHost('beta', ['ann']);
  await cli(alpha, ['send', '--from', 'ann', '--to', 'ann', '--subject', 'kept', '--body', 'mail that must not vanish']);
  const saved = join(alpha.env.MBX_HOME as string, '..', 'saved.db');
  copyFileSync(storeOf(alpha), saved);

  truncateSync(storeOf(alpha), 0);
  await refusedEverywhere(
    alpha,
    /host\.db is empty: this home has its keys and config\.json but its store .* is gone; restore it from a backup with agentmbx restore FILE/,
    ALL_COMMANDS.slice(0, 2),
  );

  rmSync(storeOf(alpha));
  await refusedEverywhere(
    alpha,
    /host\.db is missing: this home has its keys and config\.json but not its store .*; restore it from a backup with agentmbx restore FILE/,
    ALL_COMMANDS.slice(2, 4),
  );

  copyFileSync(storeOf(beta), storeOf(alpha));
  await refusedEverywhere(
    alpha,
    /host\.db is another host's store \(host key [0-9a-f-]+, this home's is [0-9a-f-]+\): put this host's own host\.db back/,
    ALL_COMMANDS.slice(4),
  );

  // its own store back: everything works again, the mail is there
  copyFileSync(saved, storeOf(alpha));
  assert.match(await cli(alpha, ['inbox', '--agent', 'ann']), /kept/);

  // init refuses a home that has keys, even without its config.json
  rmSync(join(alpha.env.MBX_HOME as string, 'config.json'));
  const init = await runCli(['init', '--host', 'alpha'], alpha.env);
  assert.equal(init.code, 1);
  assert.match(init.stderr, /already holds part of a host \(keys\/host\.key exists, config\.json does not\)/);
});
