// The host CLI's edges: one-line errors with the right exit codes, and the commands that change
// state without a daemon.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, spawnCli } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost, startCliDaemon } from './host-helpers.ts';

function oneLine(stderr: string): void {
  assert.match(stderr, /^agentmbx: [^\n]+\n$/, `one line, no stack: ${stderr}`);
}

test('usage errors exit 2, refusals 1, the unknown 3, the unpaired 4, the unreachable 5, each in one line', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const again = await runCli(['init', '--host', 'alpha'], alpha.env);
  assert.equal(again.code, 1);
  oneLine(again.stderr);
  const reserved = await runCli(['agents', 'add', 'mbx'], alpha.env);
  assert.equal(reserved.code, 2);
  oneLine(reserved.stderr);
  const badTtl = await runCli(['pair', '--ttl', 'soon'], alpha.env);
  assert.equal(badTtl.code, 2);
  const noDaemon = await runCli(['pair', '--json'], alpha.env);
  assert.equal(noDaemon.code, 0);
  assert.match((JSON.parse(noDaemon.stdout) as { token: string }).token, /^\w{4}-\w{4}-\w{4}$/);
  assert.match(noDaemon.stderr, /warning: no daemon answers for this host/);
  const unknownPeer = await runCli(['peers', 'remove', 'beta'], alpha.env);
  assert.equal(unknownPeer.code, 3);
  oneLine(unknownPeer.stderr);
  const unpaired = await runCli(['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 's', '--body', 'b'], alpha.env);
  assert.equal(unpaired.code, 4);
  assert.equal(unpaired.stderr, 'agentmbx: host "beta" is not paired (agentmbx peers)\n');
  const badToken = await runCli(['join', '127.0.0.1:1', 'not-a-token'], alpha.env);
  assert.equal(badToken.code, 1);
  oneLine(badToken.stderr);
  const unreachable = await runCli(['join', '127.0.0.1:1', 'ABCD-EFGH-JKMN'], alpha.env);
  assert.equal(unreachable.code, 5);
  assert.match(unreachable.stderr, /^agentmbx: cannot reach http:\/\/127\.0\.0\.1:1/);
});

test('local mail, roles and replies work without a daemon', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'al']);
  await cli(alpha, ['agents', 'add', 'ops-bot', '--role', 'ops']);
  assert.deepEqual(await cliJson<Array<{ name: string; role: string | null }>>(alpha, ['agents']), [
    { name: 'al', role: null, description: null },
    { name: 'ann', role: null, description: null },
    { name: 'ops-bot', role: 'ops', description: null },
    { name: 'owner', role: null, description: null },
  ]);
  const sent = await cliJson<{ id: string; local: string[]; hosts: string[] }>(alpha, [
    'send',
    '--from',
    'ann',
    '--to',
    'role:ops,al',
    '--subject',
    'deploy',
    '--body',
    'now',
    '--kind',
    'request',
  ]);
  assert.deepEqual([sent.local, sent.hosts], [['al', 'ops-bot'], []]);
  const reply = (await cli(alpha, ['send', '--from', 'ops-bot', '--to', 'ann', '--subject', 're: deploy', '--body', 'done', '--reply-to', sent.id])).trim();
  const msg = await cliJson<{ thread: string; reply_to: string; kind: string }>(alpha, ['read', reply, '--agent', 'ann']);
  assert.deepEqual([msg.thread, msg.reply_to], [sent.id, sent.id]);
  await cli(alpha, ['ack', sent.id, '--agent', 'ops-bot']);
  const status = await cliJson<{ recipients: Array<{ recipient: string; state: string }> }>(alpha, ['status', sent.id]);
  assert.deepEqual(
    status.recipients.map((r) => [r.recipient, r.state]),
    [
      ['al@alpha', 'delivered'],
      ['ops-bot@alpha', 'acked'],
    ],
  );
});

test("one daemon per home: a second one is refused, a dead one's lock is taken over", { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', []);
  const first = await startCliDaemon(alpha);
  const second = await runCli(['daemon', '--port', '0', '--bind', '127.0.0.1'], alpha.env);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /^agentmbx: a daemon already runs for this home \(pid \d+\)\n$/);
  first.kill('SIGKILL');
  await first.exited;
  alpha.url = '';
  await startCliDaemon(alpha);
});

test('send reads the body from stdin, up to the body limit', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const send = (body: string) => {
    const child = spawnCli(['send', '--from', 'ann', '--to', 'ann', '--subject', 's'], {
      env: { ...process.env, ...alpha.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.process.stdin?.end(body);
    return child;
  };
  const ok = send('from stdin');
  assert.equal(await ok.exited, 0);
  const msg = await cliJson<{ body: string }>(alpha, ['read', ok.stdout().trim(), '--agent', 'ann']);
  assert.equal(msg.body, 'from stdin');
  const big = send('x'.repeat(256 * 1024 + 1));
  assert.equal(await big.exited, 1);
  assert.equal(big.stderr(), 'agentmbx: the body is longer than 262144 bytes\n');
});
