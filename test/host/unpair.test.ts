// POST /v1/unpair (protocol §5) both ways: `peers remove` removes here whatever happens and tells
// the peer, which removes us too, logs one line and alerts its owner from `mbx`.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { listInbox } from '../../src/host/mailbox.ts';
import { unpairPeer } from '../../src/host/pairing-calls.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import { createLanServer } from '../../src/host/transport/lan/server.ts';
import { signLanHop } from '../../src/protocol/lan-hop.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import type { HostNode } from '../../src/host/core/node.ts';
import { makeHost, pin } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

async function serveWithLog(node: HostNode, lines: string[]): Promise<string> {
  const server = createLanServer(node, { log: (line) => lines.push(line) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    server.close();
    server.closeAllConnections();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('peers remove tells the peer: it removes us, logs one line and alerts its owner', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const bLog: string[] = [];
  const bUrl = await serveWithLog(b, bLog);
  pin(a, b, bUrl);
  pin(b, a, 'http://127.0.0.1:9');
  assert.deepEqual(await unpairPeer(a, 'beta'), { host: 'beta', peerTold: true, detail: null });
  assert.equal(a.store.peers.get('beta'), undefined);
  assert.equal(b.store.peers.get('alpha'), undefined);
  assert.deepEqual(bLog, ['alpha unpaired from this host (its signed /v1/unpair): its pinned keys are forgotten']);
  const alerts = listInbox(b, 'owner');
  assert.deepEqual(
    alerts.map((m) => [m.from_addr, m.kind, m.subject]),
    [['mbx@beta', 'alert', 'alpha unpaired from this host']],
  );
  assert.equal(await unpairPeer(a, 'beta'), null, 'not paired any more');
});

test('an unreachable peer is not told, within the bound; the removal here happens all the same', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  pin(a, makeHost('beta', clock), 'http://127.0.0.1:9');
  const done = await unpairPeer(a, 'beta', 1_000);
  assert.equal(done?.peerTold, false);
  assert.match(done?.detail ?? '', /cannot reach/);
  assert.equal(a.store.peers.get('beta'), undefined);
});

test('an unpair without a valid hop of a paired host removes nothing', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const lines: string[] = [];
  const bUrl = await serveWithLog(b, lines);
  pin(b, a, 'http://127.0.0.1:9');
  const forged = signLanHop('POST', '/v1/unpair', '{}', 'alpha', generateSigningKey(), clock.now);
  const res = await fetch(`${bUrl}/v1/unpair`, { method: 'POST', headers: { ...forged, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 401);
  assert.equal((await lanCall(bUrl, 'POST', '/v1/unpair', {}, makeHost('gamma', clock))).status, 401, 'not paired');
  assert.notEqual(b.store.peers.get('alpha'), undefined);
  assert.deepEqual(lines, []);
  assert.deepEqual(listInbox(b, 'owner'), []);
});
