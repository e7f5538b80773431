// The directory over the LAN, through the daemon's tick: a peer is asked at once when paired and
// about once a minute after; a fresh agent on the peer then reaches mbx_agents and `agents --all`
// without any mail; a peer that answers 404 (an older host) is ignored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { ensureAgent } from '../../src/host/agent-mail.ts';
import { DaemonTick } from '../../src/host/daemon-tick.ts';
import { directory } from '../../src/host/directory/directory.ts';
import { DIRECTORY_EVERY_MS } from '../../src/host/directory/sync.ts';
import { makeHost, pairedHosts, pin } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';
import { runCli } from '../helpers/processes.ts';
import { call, startMcp } from '../e2e/mcp-helpers.ts';
import { LOOPBACK, type CliHost } from '../e2e/host-helpers.ts';

function tickOf(node: ConstructorParameters<typeof DaemonTick>[0]): DaemonTick {
  const tick = new DaemonTick(node, { random: () => 0 });
  after(() => tick.stop());
  return tick;
}

const peerAddresses = (node: Parameters<typeof directory>[0]): string[] =>
  directory(node)
    .filter((e) => e.where === 'peer')
    .map((e) => e.address);

test('a fresh agent on the peer reaches mbx_agents and agents --all within a minute, without any mail', { timeout: 60_000 }, async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const tick = tickOf(a);
  await tick.tick();
  assert.deepEqual(peerAddresses(a), ['bea@beta', 'bob@beta'], 'asked at once after pairing');

  ensureAgent(b, 'carl', { role: 'tester', description: 'runs the tests' });
  await tick.tick();
  assert.deepEqual(peerAddresses(a), ['bea@beta', 'bob@beta'], 'not asked again before a minute');
  clock.advance(DIRECTORY_EVERY_MS);
  await tick.tick();
  assert.deepEqual(peerAddresses(a), ['bea@beta', 'bob@beta', 'carl@beta']);
  assert.equal(a.store.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM messages')?.n, 0, 'no mail moved');

  const carl = { address: 'carl@beta', host: 'beta', where: 'peer', role: 'tester', cli: null, description: 'runs the tests', last_seen: null };
  const listed = await runCli(['agents', '--all', '--json'], { MBX_HOME: a.home });
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(
    (JSON.parse(listed.stdout) as Array<{ address: string }>).find((e) => e.address === 'carl@beta'),
    carl,
  );
  const text = await runCli(['agents', '--all'], { MBX_HOME: a.home });
  assert.match(text.stdout, /^carl@beta {2}peer {2}role:tester {2}last seen never {2}runs the tests$/m);

  const host: CliHost = { name: 'alpha', env: { MBX_HOME: a.home }, daemon: null, url: '', place: LOOPBACK };
  const ann = await startMcp(host, 'ann');
  try {
    const { agents } = await call<{ agents: Array<{ address: string }> }>(ann, 'mbx_agents');
    assert.deepEqual(
      agents.find((e) => e.address === 'carl@beta'),
      carl,
    );
    // the session's client names the agent's `cli`, which peers then see in our directory
    assert.equal((agents as Array<{ address: string; cli?: string | null }>).find((e) => e.address === 'ann@alpha')?.cli, 'agentmbx-e2e');
  } finally {
    await ann.close();
  }
  // Unpaired: what alpha kept of beta goes at the next tick.
  a.store.peers.remove('beta');
  await tick.tick();
  assert.equal(a.store.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM peer_agents')?.n, 0);
  assert.equal(a.store.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM peer_links')?.n, 0);
});

test('a peer that answers 404 to /v1/agents (an older host) is ignored: nothing listed, its delivery state untouched', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann']);
  const old = makeHost('gamma', clock);
  const calls: string[] = [];
  const server = createServer((req, res) => {
    calls.push(`${req.method} ${req.url}`);
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  pin(a, old, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const tick = tickOf(a);
  await tick.tick();
  assert.ok(calls.includes('GET /v1/agents'), JSON.stringify(calls));
  assert.deepEqual(peerAddresses(a), []);
  assert.equal(a.store.peers.get('gamma')?.last_error, null);
});
