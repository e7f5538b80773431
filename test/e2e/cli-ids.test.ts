// Ids as people type them, through the real CLI: any case, a unique prefix of 8 or more
// characters (an ambiguous one refused naming the candidates), --agent left out when one agent of
// the host holds the message, and $MBX_AGENT for every command that takes --agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost } from './host-helpers.ts';

test('read, ack, status, thread and --reply-to take ids in any case and by unique prefix', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob', 'cat']);
  // ids share their first 8 characters (their time down to 1,024 ms) when made in the same second:
  // two sends at once, again until a pair does
  const ids: string[] = [];
  const sendOne = async (subject: string): Promise<string> =>
    (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob', '--subject', subject, '--body', 'b'])).trim();
  for (let round = 0; round < 6 && (ids.length === 0 || commonPrefix(ids.at(-2) as string, ids.at(-1) as string).length < 8); round += 1) {
    ids.push(...(await Promise.all([sendOne(`a${round}`), sendOne(`b${round}`)])).sort());
  }
  const [first, second] = ids.slice(-2) as [string, string];
  assert.ok(commonPrefix(first, second).length >= 8, `two sends at once share 8 characters of id: ${ids.join(' ')}`);

  const lower = await runCli(['read', first.toLowerCase(), '--agent', 'bob', '--json'], alpha.env);
  assert.equal(lower.code, 0, lower.stderr);
  assert.equal((JSON.parse(lower.stdout) as { id: string }).id, first, 'a lower-case id is the same id');

  // the two ids share their time prefix: a short prefix fits both and is refused naming them
  const shared = commonPrefix(first, second);
  const fits = ids.filter((id) => id.startsWith(shared.slice(0, 8)));
  const ambiguous = await runCli(['read', shared.slice(0, 8).toLowerCase(), '--agent', 'bob'], alpha.env);
  assert.deepEqual(
    [ambiguous.code, ambiguous.stderr],
    [2, `agentmbx: the id prefix ${shared.slice(0, 8)} fits ${fits.length} messages (${fits.join(', ')}): give more characters\n`],
  );
  const short = await runCli(['read', first.slice(0, 7), '--agent', 'bob'], alpha.env);
  assert.equal(short.code, 2);
  assert.match(short.stderr, /too short: give the whole id \(26 characters, as the inbox shows\) or at least its first 8\n$/);

  const unique = second.slice(0, shared.length + 1).toLowerCase();
  const read = await runCli(['read', unique, '--agent', 'bob', '--json'], alpha.env);
  assert.equal(read.code, 0, read.stderr);
  assert.equal((JSON.parse(read.stdout) as { id: string }).id, second, 'a unique prefix names the message');

  // several agents hold the message (sender and recipient): without --agent the CLI asks which
  const both = await runCli(['ack', first], alpha.env);
  assert.deepEqual([both.code, both.stderr], [2, `agentmbx: message ${first} is held by ann, bob: give --agent NAME (or set MBX_AGENT)\n`]);
  const acked = await runCli(['ack', first.toLowerCase(), '--json'], { ...alpha.env, MBX_AGENT: 'bob' });
  assert.equal(acked.code, 0, acked.stderr);
  assert.equal((JSON.parse(acked.stdout) as { id: string }).id, first, 'ack names the full id');

  // one holder: cat wrote to itself
  const self = (await cli(alpha, ['send', '--from', 'cat', '--to', 'cat', '--subject', 'memo', '--body', 'to self'])).trim();
  const alone = await runCli(['read', self.toLowerCase(), '--json'], alpha.env);
  assert.equal(alone.code, 0, alone.stderr);
  assert.equal((JSON.parse(alone.stdout) as { state: string }).state, 'read', 'the one agent holding it read it');

  const reply = (await cli(alpha, ['send', '--from', 'bob', '--to', 'ann', '--subject', 're', '--body', 'ok', '--reply-to', first.toLowerCase()])).trim();
  const status = await cliJson<{ id: string }>(alpha, ['status', reply.toLowerCase()]);
  assert.equal(status.id, reply);
  assert.equal((await cliJson<{ reply_to: string; thread: string }>(alpha, ['read', reply, '--agent', 'ann'])).thread, first, 'the reply joined the thread');
});

test('$MBX_AGENT stands for --agent (and send --from)', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob']);
  const env = { ...alpha.env, MBX_AGENT: 'ann' };
  const sent = await runCli(['send', '--to', 'bob', '--subject', 'hi', '--body', 'x'], env);
  assert.equal(sent.code, 0, sent.stderr);
  const inbox = await runCli(['inbox', '--json'], { ...alpha.env, MBX_AGENT: 'bob' });
  assert.equal(inbox.code, 0, inbox.stderr);
  assert.deepEqual(
    (JSON.parse(inbox.stdout) as { messages: Array<{ id: string; from: string }> }).messages.map((m) => [m.id, m.from]),
    [[sent.stdout.trim(), 'ann@alpha']],
  );
  const none = await runCli(['inbox'], alpha.env);
  assert.equal(none.code, 2, 'no --agent and no MBX_AGENT is a usage error');
});

function commonPrefix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i += 1;
  return a.slice(0, i);
}
