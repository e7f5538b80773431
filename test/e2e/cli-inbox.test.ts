// `inbox` pages (--limit, --after, --before, --newest) with total/more/next, needs_reply and refs shown
// (mail between agents of one host as from another host),
// bodies in JSON on request, and `read --peek` changing nothing; through the real CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, homeSnapshot, newCliHost } from './host-helpers.ts';

interface Page {
  messages: Array<{ id: string; needs_reply: boolean; body?: string; state: string }>;
  total: number;
  more: boolean;
  next: { after: string } | { before: string } | null;
}

test('inbox pages reach the newest mail, with total, more and the next cursor', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob']);
  const ids: string[] = [];
  for (let i = 1; i <= 7; i += 1) {
    ids.push(
      (
        await cli(alpha, ['send', '--from', 'ann', '--to', 'bob', '--subject', `m${i}`, '--body', `body ${i}`, ...(i === 7 ? ['--kind', 'request'] : [])])
      ).trim(),
    );
  }
  assert.deepEqual([...ids].sort(), ids, 'ids grow with time');
  const page = (args: string[]) => cliJson<Page>(alpha, ['inbox', '--agent', 'bob', ...args]);
  const first = await page(['--limit', '3']);
  assert.deepEqual([first.messages.map((m) => m.id), first.total, first.more, first.next], [ids.slice(0, 3), 7, true, { after: ids[2] }]);
  assert.equal(first.messages[0]?.body, undefined, 'no body without --with-body');
  const second = await page(['--limit', '3', '--after', ids[2] as string]);
  assert.deepEqual([second.messages.map((m) => m.id), second.more], [ids.slice(3, 6), true]);
  const last = await page(['--limit', '3', '--after', ids[5] as string, '--with-body']);
  assert.deepEqual([last.messages.map((m) => [m.id, m.body, m.needs_reply]), last.more, last.next], [[[ids[6], 'body 7', true]], false, null]);
  const newest = await page(['--newest', '--limit', '2']);
  assert.deepEqual([newest.messages.map((m) => m.id), newest.more, newest.next], [ids.slice(5), true, { before: ids[5] }]);
  const older = await page(['--before', ids[5] as string, '--limit', '10']);
  assert.deepEqual([older.messages.map((m) => m.id), older.more, older.next], [ids.slice(0, 5), false, null]);

  const text = await runCli(['inbox', '--agent', 'bob', '--newest', '--limit', '1'], alpha.env);
  assert.equal(text.code, 0);
  assert.equal(text.stdout, `${ids[6]}  notified   ann@alpha  m7  [needs reply]\n`);
  assert.equal(text.stderr, `agentmbx: 1 of 7 shown; more: agentmbx inbox --agent bob --limit 1 --before ${ids[6]}\n`);
  const all = await runCli(['inbox', '--agent', 'bob', '--limit', '7'], alpha.env);
  assert.deepEqual([all.stdout.split('\n').length, all.stderr], [8, ''], 'a page holding everything has no "more" line');
});

test('read --peek shows the message and changes nothing; read marks it read; needs_reply shown', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob']);
  const id = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob', '--subject', 'q', '--body', 'can you?', '--kind', 'request'])).trim();
  const before = homeSnapshot(alpha);
  const peeked = await cliJson<{ state: string; needs_reply: boolean }>(alpha, ['read', id, '--agent', 'bob', '--peek']);
  assert.deepEqual([peeked.state, peeked.needs_reply], ['delivered', true]);
  assert.deepEqual(homeSnapshot(alpha), before, 'a peek writes nothing');
  const shown = await cli(alpha, ['read', id, '--agent', 'bob']);
  assert.match(shown, /\nKind: request\nNeeds-Reply: yes\nSubject: q\n/);
  assert.equal((await cliJson<{ state: string }>(alpha, ['read', id, '--agent', 'bob', '--peek'])).state, 'read');

  // --needs-reply and --refs to an agent of this host read as they do from another host's mail
  const asked = (
    await cli(alpha, [
      'send',
      '--from',
      'ann',
      '--to',
      'bob',
      '--subject',
      'look',
      '--body',
      'b',
      '--needs-reply',
      '--refs',
      'https://x.example/pr/7,T12',
      '--refs',
      'c',
    ])
  ).trim();
  const plain = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob', '--subject', 'fyi', '--body', 'b', '--kind', 'request', '--no-needs-reply'])).trim();
  const listed = await cli(alpha, ['inbox', '--agent', 'bob']);
  assert.match(listed, new RegExp(`^${asked}  notified   ann@alpha  look  \\[needs reply\\]$`, 'm'));
  assert.match(listed, new RegExp(`^${plain}  notified   ann@alpha  fyi$`, 'm'));
  const read = await cliJson<{ needs_reply: boolean; refs: string[] }>(alpha, ['read', asked, '--agent', 'bob']);
  assert.deepEqual([read.needs_reply, read.refs], [true, ['https://x.example/pr/7', 'T12', 'c']]);
  assert.match(await cli(alpha, ['read', asked, '--agent', 'bob', '--peek']), /\nNeeds-Reply: yes\nRefs: https:\/\/x\.example\/pr\/7, T12, c\nSubject: look\n/);
  assert.equal((await cliJson<{ needs_reply: boolean }>(alpha, ['read', plain, '--agent', 'bob'])).needs_reply, false, '--no-needs-reply holds for a request');
});

test('bad paging flags exit 2 and write nothing', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['bob']);
  const before = homeSnapshot(alpha);
  const refusals: Array<[string[], string]> = [
    [['--limit', '0'], '--limit must be an integer from 1 to 500'],
    [['--limit', '501'], '--limit must be an integer from 1 to 500'],
    [['--after', 'yesterday'], '--after must be a message id (26 characters, as inbox shows)'],
    [['--newest', '--before', '01JAAAAAAAAAAAAAAAAAAAAAAA'], 'use one of --after, --before and --newest'],
  ];
  for (const [args, message] of refusals) {
    const r = await runCli(['inbox', '--agent', 'bob', ...args], alpha.env);
    assert.deepEqual([r.code, r.stdout, r.stderr], [2, '', `agentmbx: ${message}\n`], args.join(' '));
  }
  assert.deepEqual(homeSnapshot(alpha), before);
});
