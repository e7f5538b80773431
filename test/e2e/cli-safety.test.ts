// What reaches a terminal or a script: remote text escaped, a closed pipe, a terminal stdin, bad
// subjects and reply-tos, a refused init, join's default port, network causes, status counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_BIN, runCli, spawnCli, spawnProcess, tempDir } from '../helpers/processes.ts';
import { startTestRelay } from '../helpers/relay-fixture.ts';
import { TestClock } from '../helpers/clock.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, homeSnapshot, newCliHost } from './host-helpers.ts';
import { eventually } from './mcp-helpers.ts';

const RULE = 'a subject is 1 to 200 characters (Unicode code points), not blank, without control characters';

test("text output (inbox, read, watch) shows a sender's control and bidi characters escaped; JSON keeps them", { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob']);
  const body = 'red \x1b[31malert\x07\rover\u202eevil\ttab\nline two';
  const watching = spawnCli(['watch', '--agent', 'bob'], { env: { ...process.env, ...alpha.env } });
  await eventually(
    'watch is ready',
    async () => watching.stderr(),
    (err) => err.includes('watching the mail of bob@alpha'),
  );
  const id = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob', '--subject', 'see \u202eright', '--body', body])).trim();
  assert.equal(await watching.waitForLine(new RegExp(id)), `${id}  from ann@alpha (local)  see \\u202eright`);
  watching.kill('SIGTERM');
  const listed = await cli(alpha, ['inbox', '--agent', 'bob']);
  assert.equal(listed, `${id}  notified   ann@alpha  see \\u202eright\n`);
  const shown = await cli(alpha, ['read', id, '--agent', 'bob', '--peek']);
  assert.ok(shown.endsWith('\n\nred \\x1b[31malert\\x07\\x0dover\\u202eevil\ttab\nline two\n'), shown);
  assert.doesNotMatch(shown, /[\x1b\x07\r\u202e]/);
  const json = await cliJson<{ body: string; subject: string }>(alpha, ['read', id, '--agent', 'bob']);
  assert.deepEqual([json.body, json.subject], [body, 'see \u202eright']);
});

test('a reader that closes the pipe early ends the CLI quietly', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const child = spawnCli(['whoami'], { env: { ...process.env, ...alpha.env } });
  child.process.stdout?.destroy(); // closed before the CLI has started: its first write meets EPIPE
  assert.equal(await child.exited, 0);
  assert.equal(child.stderr(), '');
});

test('send without --body refuses a terminal stdin and says what to do', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  // `script` gives the CLI a terminal; `timeout` bounds it should it wait after all
  const shell = `timeout 30 ${CLI_BIN} send --from ann --to ann --subject s; echo "exit=$?"`;
  const tty = spawnProcess(['script', '-qec', shell, '/dev/null'], { env: { ...process.env, ...alpha.env } });
  assert.equal(await tty.exited, 0, tty.stderr());
  assert.equal(
    tty.stdout().replaceAll('\r', ''),
    'agentmbx: no --body, and stdin is a terminal: give --body TEXT, or pipe the body in (echo hi | agentmbx send …)\nexit=2\n',
  );
});

test('send without --body gives up on a stdin left open and silent: exit 2 after --stdin-timeout, nothing stored', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const before = homeSnapshot(alpha);
  const refusal =
    'agentmbx: no --body, and stdin stayed open with nothing more for 300ms: give --body TEXT, or pipe the body in and close stdin ' +
    '(echo hi | agentmbx send …); a slow writer gets longer with --stdin-timeout\n';
  for (const written of ['', 'half a body']) {
    const child = spawnCli(['send', '--from', 'ann', '--to', 'ann', '--subject', 's', '--stdin-timeout', '300ms'], {
      env: { ...process.env, ...alpha.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    if (written !== '') child.process.stdin?.write(written);
    // stdin stays open: the writer never closes it
    assert.deepEqual([await child.exited, child.stdout(), child.stderr()], [2, '', refusal], `after writing "${written}"`);
    child.process.stdin?.destroy();
  }
  assert.deepEqual(homeSnapshot(alpha), before, 'nothing sent, nothing stored');
  const bad = await runCli(['send', '--from', 'ann', '--to', 'ann', '--subject', 's', '--stdin-timeout', '10'], alpha.env);
  assert.deepEqual([bad.code, bad.stderr], [2, 'agentmbx: bad duration "10": a number with a unit (ms, s, m, h, d), e.g. 30s, 10m, 2h\n']);
});

test('blank or long subjects and unknown reply-tos are refused with the rule, and nothing is stored', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const before = homeSnapshot(alpha);
  const send = (extra: string[]) => runCli(['send', '--from', 'ann', '--to', 'ann', '--body', 'b', ...extra], alpha.env);
  const refusals: Array<[string[], number, string]> = [
    [['--subject', ''], 2, `the subject is empty: ${RULE}`],
    [['--subject', '   '], 2, `the subject is empty: ${RULE}`],
    [['--subject', 'x'.repeat(201)], 2, `the subject is 201 characters: ${RULE}`],
    [['--subject', 'a\x1bb'], 2, `the subject has control characters: ${RULE}`],
    [['--subject', 's', '--reply-to', 'hello world'], 2, 'bad reply-to "hello world": a message id (26 characters, as inbox shows)'],
    [['--subject', 's', '--reply-to', '01JAAAAAAAAAAAAAAAAAAAAAAA'], 3, 'no message 01JAAAAAAAAAAAAAAAAAAAAAAA on this host to reply to'],
  ];
  for (const [extra, code, message] of refusals) {
    const r = await send(extra);
    assert.deepEqual([r.code, r.stdout, r.stderr], [code, '', `agentmbx: ${message}\n`], extra.join(' '));
  }
  assert.deepEqual(homeSnapshot(alpha), before);
  assert.match(await cli(alpha, ['send', '--from', 'ann', '--to', 'ann', '--body', 'b', '--subject', 'x'.repeat(200)]), /^\w{26}\n$/, '200 is allowed');
});

test('a refused init writes nothing', { timeout: E2E_TIMEOUT_MS }, async () => {
  const home = join(tempDir(), 'home');
  const cases: Array<[string[], string]> = [
    [['--host', 'x9', '--addr', 'not a url'], 'bad address "not a url": use host:port or http://host:port'],
    [['--host', 'X'], 'bad host name "X": use 2-40 of a-z, 0-9 and -, starting with a letter or digit'],
    [['--host', 'x9', '--port', '70000'], 'bad port "70000"'],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(['init', ...args], { MBX_HOME: home });
    assert.deepEqual([r.code, r.stderr], [2, `agentmbx: ${message}\n`], args.join(' '));
    assert.equal(existsSync(home), false, 'no home created');
  }
  assert.equal((await runCli(['init', '--host', 'x9', '--addr', 'x9.lan:7373'], { MBX_HOME: home })).code, 0, 'the same init, fixed, works');
});

test('join: a bare host means port 7373, a relay is "not an agentmbx host", relay set names the cause', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', []);
  const before = homeSnapshot(alpha);
  const bare = await runCli(['join', '127.0.0.1', 'ABCD-EFGH-JKMN'], alpha.env);
  assert.match(bare.stderr, /^agentmbx: (cannot reach http:\/\/127\.0\.0\.1:7373: |http:\/\/127\.0\.0\.1:7373 is not an agentmbx host)/);
  const relay = await startTestRelay({ clock: new TestClock(Date.now()) });
  const toRelay = await runCli(['join', relay.url, 'ABCD-EFGH-JKMN', '--json'], alpha.env);
  assert.equal(toRelay.code, 5);
  assert.deepEqual(JSON.parse(toRelay.stdout), {
    error: `${relay.url} is not an agentmbx host (it answered HTTP 404): check the address; a host's daemon listens on port 7373 unless set otherwise`,
    code: 'UNREACHABLE',
  });
  await relay.stop();
  const down = await runCli(['relay', 'set', relay.url], alpha.env);
  assert.deepEqual([down.code, down.stderr], [5, `agentmbx: cannot reach the relay at ${relay.url}: ECONNREFUSED\n`]);
  assert.deepEqual(homeSnapshot(alpha), before);
});

test('status counts each outbox kind apart; agents lists owner', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  assert.deepEqual(await cliJson(alpha, ['status']), { outbox: { envelope: {}, receipt: {}, rotation: {} }, relay: null });
  assert.equal(await cli(alpha, ['status']), 'envelopes   none\nreceipts    none\nrotations   none\n');
  assert.equal(await cli(alpha, ['agents']), 'ann\nowner\n');
});
