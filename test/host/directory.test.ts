// The agent directory between hosts: GET /v1/agents (our agents to an approved peer), a peer's
// answer read as hostile input, and the listing agents see (mbx_agents, agents --all).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DIRECTORY_AGENTS_MAX, DIRECTORY_DESCRIPTION_MAX_CHARS, directory, readDirectory } from '../../src/host/directory/directory.ts';
import { ensureAgent } from '../../src/host/agent-mail.ts';
import { sendMail } from '../../src/host/send.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test("GET /v1/agents answers an approved peer with this host's own agents; others get 401", async () => {
  const clock = new TestClock();
  const { a, b, aUrl } = await pairedHosts(clock);
  ensureAgent(a, 'ann', { role: 'planner', description: 'plans the work' });
  a.store.peerLinks.setAgentCli('ann', 'claude-code');
  sendMail(a, { from: 'ann', to: ['al'], subject: 'hi', body: 'x' });
  const answer = await lanCall(aUrl, 'GET', '/v1/agents', undefined, b);
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, {
    host: 'alpha',
    agents: [
      { name: 'al', role: null, cli: null, description: null, last_seen: null },
      { name: 'ann', role: 'planner', cli: 'claude-code', description: 'plans the work', last_seen: new Date(clock.now).toISOString() },
    ],
  });
  assert.equal(a.store.peerLinks.get('beta')?.served_at, clock.now, "the peer's read is noted");
  assert.equal((await lanCall(aUrl, 'GET', '/v1/agents', undefined, null)).status, 401);
});

test("a peer's directory is read as hostile input: bad entries skipped, fields bounded, another host's list refused", () => {
  assert.equal(readDirectory({ host: 'gamma', agents: [] }, 'beta'), null);
  assert.equal(readDirectory({ host: 'beta', agents: {} }, 'beta'), null);
  assert.equal(readDirectory([], 'beta'), null);
  const long = 'd'.repeat(DIRECTORY_DESCRIPTION_MAX_CHARS + 10);
  const read = readDirectory(
    {
      host: 'beta',
      agents: [
        { name: 'Bad Name' },
        7,
        null,
        { name: 'bob', role: 'x'.repeat(65), cli: 'codex', description: `${long}`, last_seen: 'never' },
        { name: 'bob', role: 'dup' },
        { name: 'bea', role: 'rev\u0000iewer', cli: 42, description: 'a\u0007b\nc', last_seen: 1_700_000_000_000 },
      ],
    },
    'beta',
  );
  assert.deepEqual(read, [
    { name: 'bob', role: null, cli: 'codex', description: 'd'.repeat(DIRECTORY_DESCRIPTION_MAX_CHARS), last_seen: null },
    { name: 'bea', role: null, cli: null, description: 'a b\nc', last_seen: new Date(1_700_000_000_000).toISOString() },
  ]);
  const many = readDirectory({ host: 'beta', agents: Array.from({ length: DIRECTORY_AGENTS_MAX + 5 }, (_, i) => ({ name: `a${i}` })) }, 'beta');
  assert.equal(many?.length, DIRECTORY_AGENTS_MAX);
});

test("the listing shows a peer's listed agents with role, client, description and host, merged with senders seen", async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  a.store.peerLinks.replaceAgents(
    'beta',
    [{ name: 'bob', role: 'reviewer', cli: 'codex', description: 'reviews', last_seen: '2026-12-01T00:00:00.000Z' }],
    clock.now,
  );
  const peers = directory(a).filter((e) => e.where === 'peer');
  assert.deepEqual(peers, [
    { address: 'bob@beta', host: 'beta', where: 'peer', role: 'reviewer', cli: 'codex', description: 'reviews', last_seen: '2026-12-01T00:00:00.000Z' },
  ]);
  // A host that is no longer paired: its agents leave the listing.
  a.store.peers.remove('beta');
  assert.deepEqual(
    directory(a).filter((e) => e.where === 'peer'),
    [],
  );
});
