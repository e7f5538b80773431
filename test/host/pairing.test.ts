// Pairing over the real LAN server: a good token pins both sides (with enc keys), five wrong MACs
// burn the token, an expired token is refused, hello/join are rate-limited.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPairToken, PAIR_MAX_FAILURES } from '../../src/host/core/pairing.ts';
import { joinPeer } from '../../src/host/pairing-calls.ts';
import { newPairNonce, pairMac, pairTokenKey, pairTranscript, verifyPairMac, type PairParty } from '../../src/protocol/pairing.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import { OPEN_CALLS_PER_MINUTE } from '../../src/host/transport/lan/limits.ts';
import { makeHost, pin, serveLan } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

const B_ADDR = 'http://127.0.0.1:7999';

test("a good token pairs both sides, each pinning the other's keys and enc key; the token is single use", async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const { token } = createPairToken(a, 600_000);
  assert.match(token, /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
  assert.equal(await joinPeer(b, aUrl, token.toLowerCase(), B_ADDR), 'alpha');
  const onA = a.store.peers.get('beta');
  const onB = b.store.peers.get('alpha');
  assert.equal(onA?.host_pubkey, b.keys.hostKey.publicKey);
  assert.equal(onA?.enc_pub, b.keys.enc.publicKey);
  assert.equal(onA?.addr, B_ADDR);
  assert.equal(onB?.host_pubkey, a.keys.hostKey.publicKey);
  assert.equal(onB?.enc_pub, a.keys.enc.publicKey);
  assert.equal(onB?.addr, aUrl);
  const c = makeHost('gamma', clock);
  await assert.rejects(joinPeer(c, aUrl, token, 'http://127.0.0.1:7998'), /no pairing token is open/);
});

test('five wrong tokens burn the token', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const { token } = createPairToken(a, 600_000);
  const wrong = token.startsWith('0') ? `1${token.slice(1)}` : `0${token.slice(1)}`;
  for (let i = 1; i < PAIR_MAX_FAILURES; i++) await assert.rejects(joinPeer(b, aUrl, wrong, B_ADDR), /wrong token$/);
  await assert.rejects(joinPeer(b, aUrl, wrong, B_ADDR), /wrong token: the token is now burned/);
  await assert.rejects(joinPeer(b, aUrl, token, B_ADDR), /no pairing token is open/);
  assert.equal(a.store.peers.list().length, 0);
  assert.equal(b.store.peers.list().length, 0);
});

test('an expired token is refused', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const { token } = createPairToken(a, 60_000);
  clock.now += 60_000;
  await assert.rejects(joinPeer(b, aUrl, token, B_ADDR), /no pairing token is open/);
  assert.equal(a.store.peers.list().length, 0);
});

test('hello, join and rotate are rate-limited per client address', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const aUrl = await serveLan(a);
  createPairToken(a, 600_000);
  for (let i = 0; i < OPEN_CALLS_PER_MINUTE; i++) assert.equal((await lanCall(aUrl, 'GET', '/v1/pair/hello', undefined, null)).status, 200);
  const over = await lanCall(aUrl, 'GET', '/v1/pair/hello', undefined, null);
  assert.equal(over.status, 429);
  assert.equal((await lanCall(aUrl, 'POST', '/v1/pair/join', {}, null)).status, 429);
  assert.equal((await lanCall(aUrl, 'POST', '/v1/rotate', { records: [] }, null)).status, 429, 'rotation shares the budget');
  clock.now += 60_000;
  assert.equal((await lanCall(aUrl, 'GET', '/v1/pair/hello', undefined, null)).status, 200, 'a new minute, a new budget');
});

test('hello and join carry §5 fields: owner_pubkey null (never the host key), v:1, nonce_a; A answers {v, host, mac}', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const { token } = createPairToken(a, 600_000);
  const hello = await lanCall(aUrl, 'GET', '/v1/pair/hello', undefined, null);
  assert.deepEqual(Object.keys(hello.body as object).sort(), ['host', 'host_pubkey', 'nonce', 'owner_pubkey', 'v']);
  assert.equal((hello.body as { owner_pubkey: unknown }).owner_pubkey, null);
  const aParty = hello.body as PairParty;
  const bParty: PairParty = { host: 'beta', host_pubkey: b.keys.hostKey.publicKey, owner_pubkey: null, nonce: newPairNonce() };
  const transcript = pairTranscript(aParty, bParty, B_ADDR);
  const key = pairTokenKey(token);
  const join = { v: 1, ...bParty, addr: B_ADDR, nonce_a: aParty.nonce, mac: pairMac(key, 'join', transcript), unknown_member: 1 };
  const answer = await lanCall(aUrl, 'POST', '/v1/pair/join', join, null);
  assert.equal(answer.status, 200);
  const body = answer.body as { v: number; host: string; mac: string };
  assert.equal(body.v, 1);
  assert.equal(body.host, 'alpha');
  assert.equal(verifyPairMac(key, 'accept', transcript, body.mac), true);
  assert.equal(a.store.peers.get('beta')?.owner_pubkey, null);
});

test('join refusals: 400 bad join request for the shape, 409 for a name clash, 401 for nonce and MAC', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const { token } = createPairToken(a, 600_000);
  const hello = (await lanCall(aUrl, 'GET', '/v1/pair/hello', undefined, null)).body as PairParty;
  const bParty: PairParty = { host: 'beta', host_pubkey: b.keys.hostKey.publicKey, owner_pubkey: null, nonce: newPairNonce() };
  const good = { v: 1, ...bParty, addr: B_ADDR, nonce_a: hello.nonce, mac: pairMac(pairTokenKey(token), 'join', pairTranscript(hello, bParty, B_ADDR)) };
  for (const bad of [
    { ...good, v: undefined },
    { ...good, nonce_a: undefined, a_nonce: hello.nonce },
    { ...good, owner_pubkey: 'x' },
    { ...good, addr: 'ftp://x' },
  ]) {
    const r = await lanCall(aUrl, 'POST', '/v1/pair/join', bad, null);
    assert.deepEqual([r.status, r.body], [400, { error: 'bad join request' }]);
  }
  assert.equal((await lanCall(aUrl, 'POST', '/v1/pair/join', { ...good, host: 'alpha' }, null)).status, 409, "A's own name");
  assert.equal((await lanCall(aUrl, 'POST', '/v1/pair/join', { ...good, nonce_a: newPairNonce() }, null)).status, 401, 'unknown hello nonce');
  // "beta" is already paired on A under another key: a valid MAC still gets 409 and pins nothing
  pin(a, makeHost('beta', clock), 'http://127.0.0.1:7997');
  const before = a.store.peers.get('beta');
  const r = await lanCall(aUrl, 'POST', '/v1/pair/join', good, null);
  assert.equal(r.status, 409);
  assert.deepEqual(a.store.peers.get('beta'), before);
});

test('a hello from an older build of ours (its host key as owner key) stops join with a clear message', async () => {
  const clock = new TestClock();
  const b = makeHost('beta', clock);
  const old = makeHost('alpha', clock);
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ v: 1, host: 'alpha', host_pubkey: old.keys.hostKey.publicKey, owner_pubkey: old.keys.hostKey.publicKey, nonce: newPairNonce() }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    server.close();
    server.closeAllConnections();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await assert.rejects(joinPeer(b, url, 'ABCD-EFGH-JKMN', B_ADDR), /runs an older agentmbx build .*upgrade agentmbx there/);
  assert.equal(b.store.peers.list().length, 0);
});

test('join refuses a host whose name is paired here under another key, before sending anything', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock);
  const b = makeHost('beta', clock);
  const aUrl = await serveLan(a);
  const { token } = createPairToken(a, 600_000);
  pin(b, makeHost('alpha', clock), 'http://127.0.0.1:7996');
  await assert.rejects(joinPeer(b, aUrl, token, B_ADDR), /already paired here with another key/);
  assert.equal(a.store.peers.list().length, 0);
  assert.equal(a.store.pairTokens.live(clock.nowMs())?.failures, 0, 'the token is untouched');
});
