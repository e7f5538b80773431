// Pairing over the real LAN server: a good token pins both sides (with enc keys), five wrong MACs
// burn the token, an expired token is refused, hello/join are rate-limited.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPairToken, joinPeer, PAIR_MAX_FAILURES } from '../../src/host/pairing.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import { OPEN_CALLS_PER_MINUTE } from '../../src/host/transport/lan/limits.ts';
import { makeHost, serveLan } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

const B_ADDR = 'http://127.0.0.1:7999';

test('a good token pairs both sides, each pinning the other\'s keys and enc key; the token is single use', async () => {
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
