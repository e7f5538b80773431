// The real CLI on a hosted relay (a child process with enrolment_authority "account-token") and a
// local issuer: `relay set --token-command` on two homes, mail both ways, doctor ok; then a
// command exiting non-zero makes doctor fail with its reason, never the token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir } from '../helpers/processes.ts';
import { startTokenIssuer } from '../helpers/token-issuer.ts';
import { AUDIENCE, hostedConfig, startMintServer } from '../host/relay/token-fixtures.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, type CliHost, inboxMessages } from './host-helpers.ts';
import { relayedPair, send } from './host-relay-helpers.ts';

interface Check {
  check: string;
  level: string;
  detail: string;
}

async function doctor(host: CliHost): Promise<{ code: number | string; checks: Check[]; text: string }> {
  const r = await runCli(['doctor', '--json'], host.env);
  return { code: r.code, checks: (JSON.parse(r.stdout) as { checks: Check[] }).checks, text: r.stdout + r.stderr };
}

test("relay set --token-command on two homes: mail both ways through an account-token relay; doctor ok, then fails with the command's reason", {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const issuer = await startTokenIssuer(Date.now);
  const mint = await startMintServer(issuer);
  const config = join(tempDir('mbx-e2e-hosted-'), 'relay.json');
  writeFileSync(config, JSON.stringify({ enrolment_authority: 'account-token', ...hostedConfig(issuer).account_token }));
  const { relay, alpha, beta, da, db } = await relayedPair({ args: ['--config', config] }, ['--token-command', mint.command]);
  assert.ok((mint.runs.get('alpha') ?? 0) >= 1 && (mint.runs.get('beta') ?? 0) >= 1, 'both daemons got a token');

  const there = await send(alpha, 'ann', 'bob@beta', 'over the hosted relay');
  const back = await send(beta, 'bob', 'ann@alpha', 'and back');
  await db.waitForLine(new RegExp(`relay envelope ${there} seq \\d+: accepted`));
  await da.waitForLine(new RegExp(`relay envelope ${back} seq \\d+: accepted`));
  await da.waitForLine(new RegExp(`relay receipt receipt:${there}:bob@beta:1 seq \\d+: accepted`));
  assert.deepEqual(
    (await inboxMessages<{ id: string }>(beta, 'bob')).map((m) => m.id),
    [there],
  );
  assert.deepEqual(
    (await inboxMessages<{ id: string }>(alpha, 'ann')).map((m) => m.id),
    [back],
  );

  const good = await doctor(alpha);
  const relayOk = good.checks.find((c) => c.check === 'relay');
  assert.equal(relayOk?.level, 'ok', good.text);
  assert.match(relayOk?.detail ?? '', /enrolled as .*account token via command/);

  const secret = await issuer.mint(AUDIENCE, { sub: 's', account: 'acct-1', client_id: 'c', cnf: { jkt: 'x' } });
  const failing = `echo "login required (stale token ${secret})" >&2; exit 3`;
  const set = await cliJson<{ token_command: boolean }>(alpha, ['relay', 'set', relay.url, '--token-command', failing]);
  assert.equal(set.token_command, true);
  assert.ok(!JSON.stringify(set).includes(secret), 'relay set never echoes the command or a token');
  const bad = await doctor(alpha);
  assert.equal(bad.code, 1, bad.text);
  const relayBad = bad.checks.find((c) => c.check === 'relay');
  assert.equal(relayBad?.level, 'fail');
  assert.match(relayBad?.detail ?? '', /^token-failed: the token command failed: login required \(stale token \[token\]\)/);
  assert.ok(!bad.text.includes(secret), "the token appears nowhere in doctor's output");
  const text = await runCli(['doctor'], alpha.env);
  assert.match(text.stdout, /FAIL {2}relay: token-failed: the token command failed: login required/);
  assert.ok(!(text.stdout + text.stderr).includes(secret));
  await da.waitForLine(/relay token-failed: the token command failed: login required \(stale token \[token\]\)/);
  const logs = [da, db].map((d) => d.stdout() + d.stderr()).join('\n');
  for (const token of [secret, ...mint.tokens]) assert.ok(!logs.includes(token), "no token in the daemons' output");

  assert.match(await cli(alpha, ['relay', 'set', relay.url, '--no-token-command']), /token command: none/);
  assert.match(await cli(alpha, ['relay', 'set', relay.url, '--token-command', mint.command]), /token command: set/);
});
