// `agentmbx hook claude <event>` as Claude Code runs it: the real CLI, the event's JSON on stdin,
// Claude Code's JSON answer on stdout; every failure silent (exit 0, nothing printed, a log line);
// and a module graph without the command tree or the servers, so that it starts fast.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_BIN, CLI_MAIN, spawnNode, spawnProcess, tempDir } from '../helpers/processes.ts';
import { cli, E2E_TIMEOUT_MS, newCliHost, type CliHost } from './host-helpers.ts';

async function hook(
  host: CliHost,
  args: string[],
  stdin: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const child = spawnProcess([CLI_BIN, 'hook', ...args], { env: { ...process.env, ...host.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.process.stdin?.end(stdin);
  const code = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

test('hook claude: SessionStart and UserPromptSubmit add a notice, Stop blocks once, status shows the hook woke the agent', {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const host = await newCliHost('hk', ['ann', 'bo']);
  const id = (
    await cli(host, ['send', '--from', 'bo', '--to', 'ann', '--subject', 'please review', '--kind', 'request', '--body', 'the body stays out'])
  ).trim();
  const home = tempDir();
  const start = await hook(
    host,
    ['claude', 'SessionStart', '--agent', 'ann'],
    JSON.stringify({ session_id: 'abc', hook_event_name: 'SessionStart', source: 'startup' }),
    { HOME: home, XDG_CACHE_HOME: '', NODE_COMPILE_CACHE: '' },
  );
  assert.equal(start.code, 0);
  assert.ok(existsSync(join(home, '.cache', 'agentmbx', 'node-compile-cache')), "Node keeps the hook's compiled code");
  const out = JSON.parse(start.stdout) as { hookSpecificOutput: { hookEventName: string; additionalContext: string } };
  assert.equal(out.hookSpecificOutput.hookEventName, 'SessionStart');
  assert.match(out.hookSpecificOutput.additionalContext, new RegExp(`${id} from bo@hk \\(local\\): please review \\[needs reply\\]`));
  assert.doesNotMatch(start.stdout, /the body stays out/);
  // nothing new: nothing printed
  const prompt = await hook(host, ['claude', 'user-prompt-submit'], JSON.stringify({ session_id: 'abc', prompt: 'hi' }), { MBX_AGENT: 'ann' });
  assert.deepEqual([prompt.code, prompt.stdout], [0, '']);
  const second = (await cli(host, ['send', '--from', 'bo', '--to', 'ann', '--subject', 'and this', '--kind', 'request', '--body', 'x'])).trim();
  const stop = await hook(host, ['claude', 'stop', '--agent', 'ann'], JSON.stringify({ session_id: 'abc', stop_hook_active: false }));
  const block = JSON.parse(stop.stdout) as { decision: string; reason: string };
  assert.equal(block.decision, 'block');
  assert.ok(block.reason.includes(second));
  const again = await hook(host, ['claude', 'Stop', '--agent', 'ann'], JSON.stringify({ session_id: 'abc', stop_hook_active: true }));
  assert.deepEqual([again.code, again.stdout], [0, '']);
  const status = await cli(host, ['status', id]);
  assert.match(status, /ann@hk\s+notified .* woken: hook/);
});

test('hook claude fails silently: exit 0, nothing on stdout, one line in <home>/hook.log', { timeout: E2E_TIMEOUT_MS }, async () => {
  const host = await newCliHost('hs', ['ann']);
  const cases: Array<[string[], string]> = [
    [['claude', 'stop', '--agent', 'nobody'], '{}'],
    [['claude', 'stop', '--agent', 'ann'], '{not json'],
    [['claude', 'PreToolUse', '--agent', 'ann'], '{}'],
    [['claude', 'session-start'], '{}'],
  ];
  for (const [args, stdin] of cases) {
    const r = await hook(host, args, stdin);
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', ''], args.join(' '));
  }
  const lines = readFileSync(join(host.env.MBX_HOME as string, 'hook.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { error?: string });
  assert.equal(lines.length, cases.length);
  assert.match(lines[0]?.error ?? '', /no agent "nobody"/);
  assert.match(lines[1]?.error ?? '', /not JSON/);
  // a home that does not exist: still silent
  const r = await hook(host, ['claude', 'stop', '--agent', 'ann'], '{}', { MBX_HOME: join(tempDir(), 'missing') });
  assert.deepEqual([r.code, r.stdout], [0, '']);
});

test('the hook loads neither the command tree nor the servers (it runs on every prompt)', { timeout: E2E_TIMEOUT_MS }, async () => {
  const home = join(tempDir(), 'home');
  const trace = join(tempDir(), 'trace.mjs');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(
    trace,
    `import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); seen.add(r.url); return r; } });
process.on('exit', () => process.stderr.write(JSON.stringify([...seen])));`,
  );
  const child = spawnNode(['--import', trace, CLI_MAIN, 'hook', 'claude', 'stop', '--agent', 'ann'], { env: { ...process.env, MBX_HOME: home } });
  await child.exited;
  const loaded = JSON.parse(child.stderr()) as string[];
  assert.ok(
    loaded.some((u) => u.endsWith('/src/cli/hook.ts')),
    'the trace saw the hook',
  );
  for (const heavy of ['commander', 'fastify', '@modelcontextprotocol', 'pino', '/pg/', 'program.ts', 'daemon']) {
    assert.deepEqual(
      loaded.filter((u) => u.includes(heavy)),
      [],
      `${heavy} is not loaded`,
    );
  }
});
