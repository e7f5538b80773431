// The real Claude Code and Codex (pinned in test/clients), each set up with `agentmbx setup` and
// driven by a scripted model on 127.0.0.1, read and answer mail that came from a paired host. The
// model's recorded requests prove what reached it (the hooks' notices, the Stop hook's reason).
// Claude Code's channel needs a claude.ai login, which a test cannot have: the channel is checked
// with the SDK client in test/mcp. Skips, saying why, where the clients are not installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { runCli, spawnCli, tempDir, type Child } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cliJson, inboxMessages, newCliHost, pairCli, startCliDaemon, type CliHost } from '../e2e/host-helpers.ts';
import { eventually } from '../e2e/mcp-helpers.ts';
import { startAnthropicApi } from './anthropic-api.ts';
import { CLAUDE, CODEX } from './binaries.ts';
import { claudeHome, runClaude } from './claude.ts';
import { codexHome, runCodex, type CodexHome } from './codex.ts';
import { startResponsesApi } from './openai-responses-api.ts';
import type { Conversation, Reply, ScriptedModel } from './scripted-model.ts';

interface Message {
  id: string;
  from: string;
  subject: string;
  reply_to: string | null;
  thread: string;
}

const DELIVERED = ['delivered', 'notified', 'read', 'acked'];
const TMUX = ['/usr/bin/tmux', '/bin/tmux', '/usr/local/bin/tmux'].find((p) => existsSync(p)) ?? null;

/** Two paired hosts, made at the file's top level (so their folders live until its end) when a client runs here. */
async function pairedHosts(): Promise<{ alpha: CliHost; beta: CliHost }> {
  const a = await newCliHost('alpha', ['ann']);
  const b = await newCliHost('beta', ['bob', 'cody', 'carol', 'dora', 'tess']);
  await startCliDaemon(a);
  await startCliDaemon(b);
  await pairCli(a, b);
  return { alpha: a, beta: b };
}

const { alpha, beta } = CLAUDE.missing !== null && CODEX.missing !== null ? { alpha: {} as CliHost, beta: {} as CliHost } : await pairedHosts();

/** ann@alpha asks `to` for a reply; resolves once the request is in beta's store. */
async function askFromAlpha(to: string, subject: string): Promise<string> {
  const id = await sendFromAlpha(to, subject);
  await delivered(to, subject, id);
  return id;
}

async function sendFromAlpha(to: string, subject: string): Promise<string> {
  return (
    await cliJson<{ id: string }>(alpha, ['send', '--from', 'ann', '--to', `${to}@beta`, '--kind', 'request', '--subject', subject, '--body', 'please answer'])
  ).id;
}

/** Asked of the sender's host: listing beta's inbox would move the mail to notified. */
async function delivered(to: string, subject: string, id: string): Promise<void> {
  await eventually(
    `${subject} reaches ${to}@beta`,
    () => cliJson<{ recipients: Array<{ state: string }> }>(alpha, ['status', id]),
    (s) => s.recipients.every((r) => DELIVERED.includes(r.state)),
  );
}

async function replyReachesAlpha(to: string): Promise<Message> {
  const list = await eventually(
    `the reply to ${to} reaches ann@alpha`,
    () => inboxMessages<Message>(alpha, 'ann'),
    (l) => l.some((m) => m.reply_to === to),
  );
  return list.find((m) => m.reply_to === to) as Message;
}

/** The steps of an agent answering one message: read it, reply in its thread, ack it, then end the turn. */
function answerScript(id: string, onLastStep: () => Promise<void> = async () => undefined): (c: Conversation) => Promise<Reply> {
  return async (c) => {
    const done = c.toolResults.map((r) => r.name.replace(/^.*__/, ''));
    if (!done.includes('mbx_read')) return { tool: 'mbx_read', input: { ids: [id] } };
    if (!done.includes('mbx_send')) return { tool: 'mbx_send', input: { to: ['ann@alpha'], subject: 're: ping', body: 'pong', reply_to: id } };
    if (!done.includes('mbx_ack')) {
      await onLastStep();
      return { tool: 'mbx_ack', input: { ids: [id], note: 'answered' } };
    }
    return { text: 'answered the mail' };
  };
}

test('Claude Code set up by agentmbx setup: hooks tell the model of mail, it answers through the MCP tools, Stop blocks once', {
  timeout: E2E_TIMEOUT_MS,
  skip: CLAUDE.missing ?? false,
}, async () => {
  const model = await startAnthropicApi();
  const at = claudeHome(model, { MBX_HOME: beta.env.MBX_HOME, PATH: `${dirname(CLAUDE.path)}${delimiter}${process.env['PATH'] ?? ''}` });
  const setup = await runCli(['setup', 'claude', '--agent', 'bob', '--yes'], at.env);
  assert.equal(setup.code, 0, setup.stderr);
  const listed = await runClaude(at, ['mcp', 'list']);
  assert.match(listed.stdout, /^agentmbx: .*main\.ts mcp --agent bob - ✔ Connected$/m, listed.stdout + listed.stderr);

  const id = await askFromAlpha('bob', 'ping');
  let lateId = '';
  model.setScript(
    answerScript(id, async () => {
      // mail that asks for a reply arrives during the turn: the Stop hook keeps the model working once
      const { id: late } = await cliJson<{ id: string }>(beta, [
        'send',
        '--from',
        'carol',
        '--to',
        'bob',
        '--kind',
        'request',
        '--subject',
        'late question',
        '--body',
        '?',
      ]);
      lateId = late;
    }),
  );
  const run = await runClaude(at, ['-p', 'carry on with your work']);
  assert.equal(run.code, 0, run.stderr);

  const first = model.requests.find((r) => r.conversation.tools.length > 0);
  assert.ok(first !== undefined);
  assert.match(first.conversation.text, /agentmbx: 1 unread message for bob@beta:/, "the SessionStart hook's notice reached the model");
  assert.ok(first.conversation.text.includes(id), 'the notice names the message');
  assert.ok(!first.conversation.text.includes('please answer'), 'a notice never carries the body');
  const reply = await replyReachesAlpha(id);
  assert.equal(reply.from, 'bob@beta');

  // the Stop hook's reason reached the model once; the second stop (stop_hook_active) was let through
  const blocked = model.requests.filter((r) => r.conversation.text.includes('agentmbx: before you stop'));
  assert.ok(blocked.length >= 1, "the Stop hook's reason reached the model");
  assert.ok(blocked[0]?.conversation.text.includes(lateId), 'the reason names the mail that came during the turn');
  const finals = model.requests.filter((r) => r.conversation.toolResults.some((t) => t.name.endsWith('mbx_ack')));
  assert.equal(finals.length, 2, 'the turn ended twice: once blocked, once let through (never a second block)');

  // a hook removed by hand is drift, with the command that puts it back; --remove undoes setup
  const settingsPath = join(at.configDir, 'settings.json');
  const settings = JSON.parse(readFileSync(settingsPath, 'utf8')) as { hooks: Record<string, unknown>; permissions: { allow: string[] } };
  assert.deepEqual(settings.permissions.allow, ['mcp__agentmbx'], "--yes allowed this server's tools only");
  delete settings.hooks['Stop'];
  writeFileSync(settingsPath, JSON.stringify(settings));
  const drift = await runCli(['setup', '--check', '--agent', 'bob'], at.env);
  assert.equal(drift.code, 1);
  assert.match(drift.stdout, /^drifted claude \(user\): the Stop hook was removed; fix: agentmbx setup claude --agent bob$/m);
  assert.equal((await runCli(['setup', 'claude', '--agent', 'bob', '--remove'], at.env)).code, 0);
  assert.doesNotMatch((await runClaude(at, ['mcp', 'list'])).stdout, /agentmbx/);
  assert.equal(existsSync(settingsPath) ? readFileSync(settingsPath, 'utf8').includes('agentmbx') : false, false, 'hooks and permission gone');
});

async function codexReady(model: ScriptedModel): Promise<CodexHome> {
  const at = codexHome(model);
  at.env['MBX_HOME'] = beta.env.MBX_HOME;
  at.env['PATH'] = `${dirname(CODEX.path)}${delimiter}${process.env['PATH'] ?? ''}`;
  const setup = await runCli(['setup', 'codex', '--agent', 'cody', '--yes'], at.env);
  assert.equal(setup.code, 0, setup.stderr);
  return at;
}

test('Codex set up by agentmbx setup: codex exec reads and answers mail through the MCP tools; watch --exec resumes it once per batch', {
  timeout: E2E_TIMEOUT_MS,
  skip: CODEX.missing ?? false,
}, async () => {
  const model = await startResponsesApi();
  const at = await codexReady(model);
  const id = await askFromAlpha('cody', 'ping');
  model.setScript(answerScript(id));
  const run = await runCodex(at, ['exec', '--skip-git-repo-check', 'Check your agentmbx mail and answer it.']);
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stderr, /requires approval/, 'every call ran without approval (annotations, and --yes for mbx_send)');
  const reply = await replyReachesAlpha(id);
  assert.equal(reply.from, 'cody@beta');

  // the watcher resumes the last Codex session once for mail that arrives together
  const recipe =
    'codex exec resume --last --skip-git-repo-check "New agentmbx mail ($MBX_COUNT): $MBX_MESSAGE_IDS. Read it with mbx_read, answer with mbx_send reply_to, mbx_ack it."';
  const watch: Child = spawnCli(['watch', '--agent', 'cody', '--exec', recipe, '--debounce', '6000ms', '--json'], {
    env: { ...process.env, ...at.env },
    cwd: at.home,
  });
  await eventually(
    'the watcher is ready',
    async () => watch.stderr(),
    (err) => err.includes('watching the mail of cody@beta'),
  );
  const before = model.requests.length;
  // sent together: the second arrives inside the debounce window the first opened
  const ids = [await sendFromAlpha('cody', 'one'), await sendFromAlpha('cody', 'two')];
  const runLine = await watch.waitForLine(/"exit"/);
  const logged = JSON.parse(runLine) as { exit: number; messages: number | string[] };
  assert.equal(logged.exit, 0, `the recipe ran: ${watch.stderr().slice(-2000)}`);
  const prompted = model.requests.slice(before).filter((r) => r.conversation.text.includes('New agentmbx mail ('));
  assert.ok(prompted.length >= 1, "the resumed session's prompt reached the model");
  assert.match(prompted[0]?.conversation.text ?? '', /New agentmbx mail \(2\)/, 'both messages in one run');
  for (const m of ids) assert.ok(prompted[0]?.conversation.text.includes(m));
  assert.equal(
    watch
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"exit"')).length,
    1,
    'one run for the batch',
  );
  watch.kill();
});

/** Ids the watcher's prompt names ("New agentmbx mail: <id> …"). */
function promptedIds(c: Conversation): string[] {
  return [...c.text.matchAll(/New agentmbx mail[^:\n]*: ((?:[0-9A-HJKMNP-TV-Z]{26} ?)+)/g)].flatMap((m) => (m[1] ?? '').trim().split(' '));
}

test('watch --exec with the claude -p --continue recipe: the resumed session answers the new mail', {
  timeout: E2E_TIMEOUT_MS,
  skip: CLAUDE.missing ?? false,
}, async () => {
  const model = await startAnthropicApi();
  const at = claudeHome(model, { MBX_HOME: beta.env.MBX_HOME, PATH: `${dirname(CLAUDE.path)}${delimiter}${process.env['PATH'] ?? ''}` });
  assert.equal((await runCli(['setup', 'claude', '--agent', 'dora', '--yes'], at.env)).code, 0);
  assert.equal((await runClaude(at, ['-p', 'hello'])).code, 0, 'a first conversation to continue');
  model.setScript(async (c) => {
    const id = promptedIds(c)[0];
    return id === undefined ? { text: 'nothing to do' } : answerScript(id)(c);
  });
  const recipe = 'claude -p --continue "New agentmbx mail: $MBX_MESSAGE_IDS. Read, answer and ack it with the mbx tools."';
  const watch = spawnCli(['watch', '--agent', 'dora', '--exec', recipe, '--json'], { env: { ...process.env, ...at.env }, cwd: at.home });
  await eventually(
    'the watcher is ready',
    async () => watch.stderr(),
    (err) => err.includes('watching the mail of dora@beta'),
  );
  const id = await sendFromAlpha('dora', 'ping');
  const logged = JSON.parse(await watch.waitForLine(/"exit"/)) as { exit: number };
  assert.equal(logged.exit, 0, watch.stderr().slice(-2000));
  assert.ok(
    model.requests.some((r) => promptedIds(r.conversation).includes(id)),
    "the recipe's prompt reached the model",
  );
  assert.equal((await replyReachesAlpha(id)).from, 'dora@beta');
  watch.kill();
});

test('watch --exec with the tmux send-keys recipe types one line per batch into the pane', {
  timeout: E2E_TIMEOUT_MS,
  skip:
    TMUX === null ? 'tmux is not installed' : CLAUDE.missing !== null && CODEX.missing !== null ? 'the paired hosts are made only where a client runs' : false,
}, async (t) => {
  // the tmux server leaves our process groups (it daemonizes): ended with the test, before its
  // folder goes (hooks run in the order they were added)
  let socket = '';
  t.after(() => {
    try {
      execFileSync(TMUX as string, ['-S', socket, 'kill-server'], { stdio: 'ignore' });
    } catch {
      // the server is gone already
    }
  });
  socket = join(tempDir('mbx-tmux-'), 'tmux.sock');
  const tmux = (args: string[]): string => execFileSync(TMUX as string, ['-S', socket, ...args], { encoding: 'utf8' });
  // the pane runs cat: what the recipe types shows in the pane
  tmux(['new-session', '-d', '-s', 'work', '-x', '200', '-y', '20', 'cat']);
  const recipe = `${TMUX} -S ${socket} send-keys -t work "New agentmbx mail: $MBX_MESSAGE_IDS" Enter`;
  // both messages wait before the watcher starts: its first run takes them as one batch (the exec
  // cursor is durable), whatever the machine's load does to the time between two sends
  const ids: string[] = [];
  for (const subject of ['one', 'two'])
    ids.push((await cliJson<{ id: string }>(beta, ['send', '--from', 'carol', '--to', 'tess', '--subject', subject, '--body', 'x'])).id);
  const watch = spawnCli(['watch', '--agent', 'tess', '--exec', recipe, '--debounce', '100ms', '--json'], { env: { ...process.env, ...beta.env } });
  const logged = JSON.parse(await watch.waitForLine(/"exit"/)) as { exit: number };
  assert.equal(logged.exit, 0, watch.stderr().slice(-2000));
  const pane = await eventually(
    'the line shows in the pane',
    async () => tmux(['capture-pane', '-p', '-t', 'work']),
    (text) => text.includes(ids[1] as string),
  );
  const lines = pane.split('\n').filter((l) => l.startsWith('New agentmbx mail:'));
  assert.equal(lines.length, 2, 'typed once, echoed once by the terminal (cat prints it back)');
  assert.equal(lines[0], `New agentmbx mail: ${ids.join(' ')}`, 'both messages in one line');
  watch.kill();
});
