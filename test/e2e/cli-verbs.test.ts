// The agents' verbs in the CLI, through the real `agentmbx`: thread, search, send --needs-reply and
// --refs, inbox --wait at its timeout (nothing printed, exit 7), usage errors in one line and exit 2,
// an empty body refused unless --allow-empty.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost } from './host-helpers.ts';

interface Msg {
  id: string;
  subject: string;
  thread: string;
}

test('thread, search, send --needs-reply and --refs, inbox --wait timing out, one-line usage errors', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob', 'cat']);
  const first = (
    await cli(alpha, [
      'send',
      '--from',
      'ann',
      '--to',
      'bob',
      '--subject',
      'plan zanzibar',
      '--body',
      'the quokka build',
      '--needs-reply',
      '--refs',
      'https://example.org/1,src/a.ts',
      '--refs',
      'abc123',
    ])
  ).trim();
  const reply = (
    await cli(alpha, [
      'send',
      '--from',
      'bob',
      '--to',
      'ann',
      '--subject',
      'Re: plan',
      '--body',
      'zanzibar is fine',
      '--reply-to',
      first.slice(0, 20).toLowerCase(),
      '--no-needs-reply',
      '--kind',
      'request',
    ])
  ).trim();

  const thread = await cliJson<{ thread: string; messages: Msg[] }>(alpha, ['thread', reply, '--agent', 'ann']);
  assert.deepEqual([thread.thread, thread.messages.map((m) => m.id)], [first, [first, reply]]);
  const threadText = await cli(alpha, ['thread', reply.toLowerCase(), '--agent', 'bob']);
  assert.match(threadText, /^From: ann@alpha\n[\s\S]*Subject: plan zanzibar\n[\s\S]*\n\n---\n\nFrom: bob@alpha\n[\s\S]*Subject: Re: plan\n/);

  const found = await cliJson<{ messages: Msg[] }>(alpha, ['search', 'zanzibar', '--agent', 'ann']);
  assert.deepEqual(found.messages.map((m) => m.id).sort(), [first, reply].sort());
  const byEnv = await runCli(['search', 'quokka', 'build'], { ...alpha.env, MBX_AGENT: 'bob' });
  assert.equal(byEnv.code, 0, byEnv.stderr);
  assert.match(byEnv.stdout, new RegExp(`^${first}  delivered  ann@alpha  plan zanzibar\n$`));

  const tooMany = await runCli(
    ['send', '--from', 'ann', '--to', 'bob', '--subject', 's', '--body', 'b', '--refs', Array.from({ length: 101 }, (_, i) => `r${i}`).join(',')],
    alpha.env,
  );
  assert.deepEqual([tooMany.code, tooMany.stderr], [1, 'agentmbx: cannot send: too many refs\n'], 'the refs reach the envelope');

  // inbox --wait at its timeout: nothing on stdout and exit 7; with --json, timed_out
  const quiet = await runCli(['inbox', '--agent', 'cat', '--wait', '--timeout', '1'], alpha.env);
  assert.deepEqual([quiet.code, quiet.stdout, quiet.stderr], [7, '', 'agentmbx: no new mail for cat within 1 s\n']);
  const quietJson = await runCli(['inbox', '--agent', 'cat', '--wait', '--timeout', '1', '--json'], alpha.env);
  assert.equal(quietJson.code, 7);
  assert.deepEqual(JSON.parse(quietJson.stdout), { timed_out: true, messages: [], total: 0, more: false, next: null });
  const mail = await cliJson<{ timed_out: boolean; messages: Msg[] }>(alpha, ['inbox', '--agent', 'ann', '--wait', '--timeout', '1']);
  assert.deepEqual([mail.timed_out, mail.messages.map((m) => m.id)], [false, [reply]]);

  // usage errors: one line (no "Did you mean" second line, in JSON either), exit 2
  const typo = await runCli(['serch', 'x', '--json'], alpha.env);
  assert.equal(typo.code, 2);
  assert.deepEqual(JSON.parse(typo.stdout), { error: "unknown command 'serch' (Did you mean search?)", code: 'USAGE' });
  const typoText = await runCli(['serch', 'x'], alpha.env);
  assert.deepEqual([typoText.code, typoText.stderr], [2, "agentmbx: unknown command 'serch' (Did you mean search?)\n"]);
  const noTo = await runCli(['send', '--from', 'ann', '--to', '', '--subject', 's', '--body', 'b'], alpha.env);
  assert.deepEqual(
    [noTo.code, noTo.stderr],
    [2, 'agentmbx: --to is empty: give one or more addresses, comma-separated (name, name@host, role:<role>, *, owner)\n'],
  );
  const empty = await runCli(['send', '--from', 'ann', '--to', 'bob', '--subject', 's', '--body', ''], alpha.env);
  assert.deepEqual([empty.code, empty.stderr], [2, 'agentmbx: the body is empty: give --body TEXT or pipe the body in; --allow-empty sends it anyway\n']);
  const allowed = await runCli(['send', '--from', 'ann', '--to', 'bob', '--subject', 's', '--body', '', '--allow-empty'], alpha.env);
  assert.equal(allowed.code, 0, allowed.stderr);
});
