// Presence and addresses: POST /v1/presence keeps a peer's highest beacon, a verified call's
// x-mbx-port names where the peer listens, and the daemon moves a pin only to an address whose
// GET /v1/status?challenge= answers signed by the pinned key: impostors are never pinned.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { DaemonTick } from '../../src/host/daemon-tick.ts';
import type { HostNode } from '../../src/host/core/node.ts';
import { PROBE_RETRY_MS, proveAddress } from '../../src/host/presence/keeper.ts';
import { setListening } from '../../src/host/presence/listening.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import { makeHost, pin, serveLan } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

/** An address on the loopback network where nothing listens: the peer's old address. */
const OLD_ADDR = 'http://127.0.0.2:9';

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function tickOf(node: HostNode, log: string[]): DaemonTick {
  const tick = new DaemonTick(node, { log: (line) => log.push(line), random: () => 0 });
  after(() => tick.stop());
  return tick;
}

/** An HTTP server that answers every GET /v1/status?challenge= with what `answer` makes of the challenge. */
async function statusServer(answer: (challenge: string) => Record<string, unknown>): Promise<string> {
  const server = createServer((req, res) => {
    const challenge = new URL(req.url ?? '/', 'http://x').searchParams.get('challenge') ?? '';
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(challenge)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test("POST /v1/presence takes a peer's beacon (202), keeps the highest seq, refuses a malformed one", async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  pin(a, b, OLD_ADDR);
  const beacon = { v: 1, seq: 1000, port: 7373, addrs: ['192.0.2.7', 'http://192.0.2.8:7400', '192.0.2.9:7500', 'fe80::1', 'bad addr!'], version: '0.6.0' };
  assert.deepEqual(await lanCall(aUrl, 'POST', '/v1/presence', beacon, b), { status: 202, body: { ok: true } });
  const kept = (): unknown => JSON.parse(a.store.peerLinks.get('beta')?.presence_addrs ?? 'null');
  assert.deepEqual(kept(), ['http://127.0.0.1:7373', 'http://192.0.2.7:7373', 'http://192.0.2.8:7400', 'http://192.0.2.9:7500']);
  assert.equal((await lanCall(aUrl, 'POST', '/v1/presence', { ...beacon, seq: 999, addrs: ['192.0.2.1'] }, b)).status, 202);
  assert.equal(a.store.peerLinks.get('beta')?.presence_seq, 1000, 'an older beacon changes nothing');
  assert.deepEqual(kept(), ['http://127.0.0.1:7373', 'http://192.0.2.7:7373', 'http://192.0.2.8:7400', 'http://192.0.2.9:7500']);
  for (const bad of [
    { ...beacon, v: 2 },
    { ...beacon, seq: -1 },
    { ...beacon, port: 70_000 },
    { ...beacon, addrs: 'x' },
    { ...beacon, addrs: Array(17).fill('a') },
  ]) {
    const answer = await lanCall(aUrl, 'POST', '/v1/presence', bad, b);
    assert.equal(answer.status, 400, JSON.stringify(bad));
  }
  assert.equal((await lanCall(aUrl, 'POST', '/v1/presence', beacon, null)).status, 401, 'unsigned: refused');
});

test('a beacon from a new address moves the pin after the address proves the key; mail then goes there', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann']);
  const b = makeHost('beta', clock, ['bob']);
  const aUrl = await serveLan(a);
  const bUrl = await serveLan(b);
  pin(a, b, OLD_ADDR);
  pin(b, a, aUrl);
  setListening(b, { port: portOf(bUrl), bind: '127.0.0.1' });
  const logB: string[] = [];
  await tickOf(b, logB).tick();
  assert.deepEqual(JSON.parse(a.store.peerLinks.get('beta')?.presence_addrs ?? 'null'), [bUrl], 'beta told alpha at its start');
  const logA: string[] = [];
  await tickOf(a, logA).tick();
  assert.equal(a.store.peers.get('beta')?.addr, bUrl);
  assert.ok(logA.includes(`beta moved: its address is now ${bUrl} (it proved its key there; was ${OLD_ADDR})`), logA.join(' | '));
});

test("a verified call's x-mbx-port names where the peer listens", async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const bUrl = await serveLan(b);
  pin(a, b, OLD_ADDR);
  setListening(b, { port: portOf(bUrl), bind: '127.0.0.1' });
  assert.equal((await lanCall(aUrl, 'GET', '/v1/enc-key', undefined, b)).status, 200);
  assert.equal(a.store.peerLinks.get('beta')?.call_addr, bUrl);
  const log: string[] = [];
  await tickOf(a, log).tick();
  assert.equal(a.store.peers.get('beta')?.addr, bUrl);
});

test('an address that cannot prove the pinned key is never pinned: another key, a forged signature, a replayed answer', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const bUrl = await serveLan(b);
  // a host of the same name with its own key
  const otherKey = await serveLan(makeHost('beta', clock));
  // one that names beta's key and our challenge, signed by another key
  const mallory = makeHost('mallory', clock);
  const forged = await statusServer((challenge) => {
    const signed = { v: 1, host: 'beta', host_pubkey: b.keys.hostKey.publicKey, version: '0.6.0', type: 'status', challenge };
    return { ...signed, sig: mallory.keys.hostKey.sign(canonicalJson(signed)) };
  });
  // one that replays a real answer of beta's to another challenge
  const replayed = await statusServer(() => {
    const signed = { v: 1, host: 'beta', host_pubkey: b.keys.hostKey.publicKey, version: '0.6.0', type: 'status', challenge: 'an-old-challenge' };
    return { ...signed, sig: b.keys.hostKey.sign(canonicalJson(signed)) };
  });
  pin(a, b, OLD_ADDR);
  const peer = a.store.peers.get('beta') ?? assert.fail();
  for (const impostor of [otherKey, forged, replayed]) assert.equal(await proveAddress(peer, impostor), false, impostor);
  assert.equal(await proveAddress(peer, bUrl), true);

  // A beacon naming the impostors first: each is probed and refused, the pin moves only to beta's own address.
  const beacon = { v: 1, seq: clock.now, port: portOf(otherKey), addrs: [forged, replayed, bUrl], version: '0.6.0' };
  assert.equal((await lanCall(aUrl, 'POST', '/v1/presence', beacon, b)).status, 202);
  const log: string[] = [];
  const tick = tickOf(a, log);
  await tick.tick();
  assert.equal(a.store.peers.get('beta')?.addr, bUrl, log.join(' | '));
  assert.deepEqual(
    log.filter((l) => l.includes(' moved: ')),
    [`beta moved: its address is now ${bUrl} (it proved its key there; was ${OLD_ADDR})`],
  );
  // Probed again only after PROBE_RETRY_MS, and never pinned.
  a.store.peerLinks.moveAddr('beta', OLD_ADDR);
  clock.advance(PROBE_RETRY_MS);
  a.store.peerLinks.notePresence('beta', clock.now, [otherKey, forged, replayed], clock.now);
  for (let i = 0; i < 4; i++) await tick.tick();
  assert.equal(a.store.peers.get('beta')?.addr, OLD_ADDR);
});
