// The agent operations under the CLI and the MCP server: search kept with the mail, sending once
// per idempotency key, what an agent may see, and noticing new mail in the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { ensureAgent, searchMail, sendOnce, threadOf, trustOf } from '../../src/host/agent-mail.ts';
import { waitForUnread, watchDeliveries } from '../../src/host/mail-watch.ts';
import { closeNode, openNode } from '../../src/host/open-node.ts';
import { sendMail } from '../../src/host/send.ts';
import { HostStore } from '../../src/host/store/host-store.ts';
import { MIGRATIONS } from '../../src/host/store/migrations/index.ts';
import { tempDir } from '../helpers/processes.ts';
import { makeHost } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

/** A watch whose timer never fires during the test: looks happen through check(). */
const NO_TIMER_MS = 3_600_000;

test('the search index commits and rolls back with the mail it indexes', () => {
  const a = makeHost('alpha', new TestClock(), ['ann', 'al']);
  const sent = sendMail(a, { from: 'ann', to: ['al'], subject: 'quarterly numbers', body: 'the walrus budget is fine' });
  assert.deepEqual(
    searchMail(a, 'al', 'walrus budget').map((m) => m.id),
    [sent.id],
  );
  assert.deepEqual(
    searchMail(a, 'ann', 'QUARTERLY').map((m) => m.id),
    [sent.id],
    'the sender finds its own mail',
  );
  assert.throws(
    () =>
      a.store.transaction(() => {
        sendMail(a, { from: 'ann', to: ['al'], subject: 'never', body: 'pelican' });
        throw new Error('crash before commit');
      }),
    /crash before commit/,
  );
  assert.deepEqual(searchMail(a, 'al', 'pelican'), [], 'nothing indexed for mail that was rolled back');
  assert.deepEqual(searchMail(a, 'al', 'walrus AND OR "('), [], 'query syntax is taken as words, never an FTS error');
  assert.throws(() => searchMail(a, 'al', '"*"'), /no words/);
});

test('mail stored before the search migration is searchable after it', () => {
  const path = join(tempDir(), 'store.sqlite');
  const raw = new DatabaseSync(path);
  // Every migration before the one that adds the index, whatever its number.
  const searchIndex = MIGRATIONS.findIndex((m) => m.up.toString().includes('CREATE VIRTUAL TABLE messages_fts'));
  assert.ok(searchIndex > 0);
  for (const m of MIGRATIONS.slice(0, searchIndex)) m.up(raw);
  raw.exec(`PRAGMA user_version = ${searchIndex}`);
  raw.exec(`INSERT INTO messages (id, direction, from_addr, sender_host, to_json, thread, kind, subject, body, ts, created_at)
    VALUES ('01OLD', 'out', 'ann@alpha', 'alpha', '[]', '01OLD', 'message', 'old news', 'an aardvark', '2026-01-01T00:00:00.000Z', 0)`);
  raw.close();
  const store = HostStore.open(path);
  try {
    assert.deepEqual(
      store.agentMail.search('ann', 'ann@alpha', '"aardvark"', 10).map((m) => m.id),
      ['01OLD'],
    );
  } finally {
    store.close();
  }
});

test('one idempotency key sends once per agent; a refused send does not use the key up', () => {
  const a = makeHost('alpha', new TestClock(), ['ann', 'al']);
  const req = { from: 'ann', to: ['al'], subject: 's', body: 'b' };
  const first = sendOnce(a, req, 'k');
  assert.deepEqual(sendOnce(a, req, 'k'), { id: first.id, localAgents: [], remoteHosts: [], duplicate: true });
  assert.notEqual(sendOnce(a, { ...req, from: 'al', to: ['ann'] }, 'k').id, first.id, 'keys belong to one agent');
  assert.throws(() => sendOnce(a, { ...req, to: ['nobody'] }, 'k2'), /no agent "nobody"/);
  assert.equal(sendOnce(a, req, 'k2').duplicate, false);
  assert.equal(a.store.mail.inbox('al', 100, true).length, 2);
  assert.throws(() => sendOnce(a, req, 'x'.repeat(201)), /1-200 characters/);
  // a reuse that differs only in the reply flag or the refs is other content, not a retry
  const asked = { ...req, kind: 'request', refs: ['https://x.test/1'] };
  const once = sendOnce(a, asked, 'k3');
  assert.equal(sendOnce(a, asked, 'k3').id, once.id);
  assert.throws(() => sendOnce(a, { ...asked, needsReply: false }, 'k3'), /idempotency/);
  assert.throws(() => sendOnce(a, { ...asked, refs: [] }, 'k3'), /idempotency/);
  assert.equal(sendOnce(a, { ...asked, needsReply: true }, 'k3').id, once.id, 'a request asks for a reply whether or not it says so');
});

test('an agent sees the threads and search hits of its own mail only, each with who vouches for it', () => {
  const a = makeHost('alpha', new TestClock(), ['ann', 'al', 'eve']);
  const first = sendMail(a, { from: 'ann', to: ['al'], subject: 'plan', body: 'secret otter' });
  const reply = sendMail(a, { from: 'al', to: ['ann'], subject: 're: plan', body: 'ok', replyTo: first.id });
  assert.deepEqual(
    threadOf(a, 'ann', reply.id).map((m) => [m.id, m.trust]),
    [
      [first.id, 'local'],
      [reply.id, 'local'],
    ],
  );
  assert.throws(() => threadOf(a, 'eve', first.id), /no message .* sent or received by eve/);
  assert.deepEqual(searchMail(a, 'eve', 'otter'), []);
  const message = a.store.mail.message(first.id);
  assert.ok(message !== undefined);
  assert.equal(trustOf(a, { ...message, direction: 'in', sender_host: 'gone' }), 'signed by host gone, which is no longer paired');
});

test('agent names and settings: created when new, refused when bad, nothing stored on refusal', () => {
  const a = makeHost('alpha', new TestClock());
  assert.equal(ensureAgent(a, 'ann', { role: 'ops', description: 'runs deploys' }), true);
  assert.equal(ensureAgent(a, 'ann', { description: 'now reviews' }), false);
  assert.deepEqual([a.store.mail.agent('ann')?.role, a.store.agentMail.description('ann')], ['ops', 'now reviews']);
  assert.throws(() => ensureAgent(a, 'owner'), /reserved/);
  assert.throws(() => ensureAgent(a, 'Bad Name'), /bad agent name/);
  assert.throws(() => ensureAgent(a, 'bo', { role: 'Not Ok' }), /bad role/);
  assert.deepEqual(
    a.store.mail.agents().map((x) => x.name),
    ['ann'],
  );
});

test('the store watch reports deliveries made after it started, once each, from this or another connection', async () => {
  const a = makeHost('alpha', new TestClock(), ['ann', 'al']);
  const before = sendMail(a, { from: 'ann', to: ['al'], subject: 'before', body: 'b' });
  const seen: string[] = [];
  const watch = watchDeliveries(a, 'al', (ids) => seen.push(...ids), NO_TIMER_MS);
  try {
    const own = sendMail(a, { from: 'ann', to: ['al'], subject: 'own', body: 'b' });
    sendMail(a, { from: 'al', to: ['ann'], subject: 'to ann', body: 'b' });
    watch.check();
    watch.check();
    assert.deepEqual(seen, [own.id], 'new mail to al, once; not what came before, not mail to others');
    assert.ok(!seen.includes(before.id));
  } finally {
    watch.stop();
  }

  assert.equal(await waitForUnread(a, 'al', 0), true, 'unread mail exists: no wait');
  assert.equal(await waitForUnread(a, 'ann', 0), true);
  const b = makeHost('beta', new TestClock(), ['bob']);
  assert.equal(await waitForUnread(b, 'bob', 0), false, 'no mail: empty at the timeout');
  const aborted = new AbortController();
  aborted.abort();
  assert.equal(await waitForUnread(b, 'bob', 60_000, aborted.signal), false, 'a cancelled wait ends');
  // Another connection (the daemon, the CLI) commits: the waiting side notices through data_version.
  const waiting = waitForUnread(b, 'bob', 60_000);
  const other = openNode(b.home);
  try {
    sendMail(other, { from: 'bob', to: ['bob'], subject: 'self', body: 'b' });
  } finally {
    closeNode(other);
  }
  assert.equal(await waiting, true);
});

test('a watch hears of mail another connection commits through the WAL file, without its timer', { timeout: 30_000 }, async () => {
  const b = makeHost('beta', new TestClock(), ['bob']);
  let heard: (ids: string[]) => void = () => {};
  const seen = new Promise<string[]>((resolve) => {
    heard = resolve;
  });
  const watch = watchDeliveries(b, 'bob', (ids) => heard(ids), NO_TIMER_MS);
  const other = openNode(b.home);
  try {
    const sent = sendMail(other, { from: 'bob', to: ['bob'], subject: 'from the daemon', body: 'b' });
    assert.deepEqual(await seen, [sent.id]);
  } finally {
    closeNode(other);
    watch.stop();
  }
});
