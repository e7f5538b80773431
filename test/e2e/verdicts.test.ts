// Exit codes and verdicts tell the truth (issue 25): `status <id>` exits 1 when a copy ended rejected
// (0 while it is on its way), doctor ends with a verdict counting warnings and failures (exit 0 with
// warnings, 1 under --strict), and a quarantined relay item can be listed, shown and dismissed: it
// then leaves doctor, and stays in the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../helpers/processes.ts';
import { TestClock } from '../helpers/clock.ts';
import { makeHost, pin } from '../host/fixtures.ts';
import { sendMail } from '../../src/host/send.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { CLOSED_ADDR } from './host-relay-helpers.ts';

test('status <id> exits 1 once a copy ended rejected, 0 while it is on its way', async () => {
  const clock = new TestClock(Date.now());
  const alpha = makeHost('alpha', clock, ['ann']);
  const beta = makeHost('beta', clock, ['bob']);
  pin(alpha, beta, CLOSED_ADDR);
  const { id } = sendMail(alpha, { from: 'ann', to: ['bob@beta'], subject: 'to be refused', body: 'x' });
  const env = { MBX_HOME: alpha.home };
  const waiting = await runCli(['status', id], env);
  assert.equal(waiting.code, 0, waiting.stderr);
  assert.match(waiting.stdout, /\*@beta\s+queued/);

  const row = alpha.store.outbox.forMessage(id)[0];
  assert.ok(row !== undefined && alpha.store.outbox.end(row.id, 'reject', clock.now, { transport: 'lan', error: 'no agent bob here' }));
  const refused = await runCli(['status', id], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /\*@beta\s+rejected.*no agent bob here/);
  assert.equal(refused.stderr, `agentmbx: 1 copy(ies) of ${id} ended rejected\n`);
  const json = await runCli(['status', id, '--json'], env);
  assert.equal(json.code, 1);
  const status = JSON.parse(json.stdout) as { recipients: Array<{ state: string }> };
  assert.deepEqual(
    status.recipients.map((r) => r.state),
    ['rejected'],
    'with --json, stdout is the status alone',
  );
});

test('doctor ends with a verdict counting warnings; relay quarantine lists, shows and dismisses (kept in the store)', async () => {
  const clock = new TestClock(Date.now());
  const node = makeHost('alpha', clock, ['ann']);
  node.store.relay.pin(CLOSED_ADDR, generateSigningKey().publicKey, clock.now);
  const wire = JSON.stringify({ v: 3, id: 'bounced-typo' });
  node.store.relay.quarantine({
    relay_url: CLOSED_ADDR,
    epoch: 'e1',
    seq: 7,
    kind: 'envelope',
    item_id: '01M8VA0EG03SCBNH2J40G54J8A',
    sender_pubkey: generateSigningKey().publicKey,
    reason: 'sender is not a paired host',
    wire_b64: Buffer.from(wire).toString('base64'),
    at: clock.now,
  });
  const env = { MBX_HOME: node.home };

  // independent commands run side by side: the test stays short on a loaded machine
  const [before, strict, jsonRun, listed, shown, missing] = await Promise.all([
    runCli(['doctor'], env),
    runCli(['doctor', '--strict'], env),
    runCli(['doctor', '--json'], env),
    runCli(['relay', 'quarantine'], env),
    runCli(['relay', 'quarantine', 'show', '7'], env),
    runCli(['relay', 'quarantine', 'dismiss', '8'], env),
  ]);
  assert.equal(before.code, 0, 'warnings alone exit 0');
  assert.match(before.stdout, /WARN {2}relay quarantine: 1 refused item\(s\): agentmbx relay quarantine/);
  assert.doesNotMatch(before.stdout, /all good/);
  const warnings = (before.stdout.match(/^WARN/gm) ?? []).length;
  assert.ok(warnings >= 2, 'the unreachable relay and the quarantine');
  assert.equal(before.stdout.trimEnd().split('\n').at(-1), `${warnings} warnings`);
  assert.equal(strict.code, 1);
  assert.match(strict.stderr, new RegExp(`doctor --strict: ${warnings} warnings`));
  const json = JSON.parse(jsonRun.stdout) as { ok: boolean; warnings: number; failures: number; verdict: string };
  assert.deepEqual([json.ok, json.warnings, json.failures, json.verdict], [true, warnings, 0, `${warnings} warnings`]);

  assert.match(listed.stdout, /seq 7 {2}envelope 01M8VA0EG03SCBNH2J40G54J8A from .*: sender is not a paired host\n/);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /refused: sender is not a paired host\nwire: \{"v":3,"id":"bounced-typo"\}/);
  assert.equal(missing.code, 3);
  const dismissed = await runCli(['relay', 'quarantine', 'dismiss', '7', '--json'], env);
  assert.deepEqual(JSON.parse(dismissed.stdout), { seq: 7, epoch: 'e1', dismissed: true, already: false });

  const [after, undismissed, all] = await Promise.all([
    runCli(['doctor'], env),
    runCli(['relay', 'quarantine'], env),
    runCli(['relay', 'quarantine', '--all'], env),
  ]);
  assert.match(after.stdout, /ok {4}relay quarantine: empty/);
  assert.equal(after.stdout.trimEnd().split('\n').at(-1), warnings - 1 === 1 ? '1 warning' : `${warnings - 1} warnings`);
  assert.equal(undismissed.stdout, 'no quarantined relay items but 1 dismissed (agentmbx relay quarantine --all)\n');
  assert.match(all.stdout, /seq 7 .*\(dismissed /);
  assert.equal(node.store.relay.quarantined().length, 1, 'nothing was deleted');
});
