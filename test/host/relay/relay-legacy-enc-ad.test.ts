// A relay that predates signed v2 enc-key ads (issue 13): our real relay behind a proxy that answers
// as the older one. The session falls back to the v1 ad and remembers that (forgotten on a relay
// change or a new epoch), doctor says so without failing, mail flows both ways, and a peer's enc key
// comes from the v1 lookup only when signed by its pinned key and when we hold none yet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDoctor } from '../../../src/host/doctor.ts';
import { listInbox } from '../../../src/host/mailbox.ts';
import { sendMail } from '../../../src/host/send.ts';
import { acceptPeerEncAdV1 } from '../../../src/host/relay-client/enc-ads.ts';
import { setRelay } from '../../../src/host/relay-client/pin.ts';
import { ENC_AD_REFRESH_MS, ensureSession, noteRelayReset } from '../../../src/host/relay-client/session.ts';
import type { HostNode } from '../../../src/host/core/node.ts';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import { signEncAdV1, verifyEncAdV1 } from '../../../src/protocol/records/enc-ad.ts';
import { isPlainObject } from '../../../src/protocol/validate.ts';
import { startLegacyRelayProxy, type LegacyRelayProxy } from '../../helpers/legacy-relay-proxy.ts';
import { makeHost, pin } from '../fixtures.ts';
import { rawHost, relayWorld, tick, tickUntilRow, type RelayWorld } from './relay-fixtures.ts';
import { TestClock } from '../../helpers/clock.ts';

/** Two hosts on cut networks whose relay URL is a legacy proxy in front of the real relay. */
async function legacyWorld(keepInfo = false): Promise<{ world: RelayWorld; proxy: LegacyRelayProxy }> {
  let proxy: LegacyRelayProxy | undefined;
  const world = await relayWorld({}, new TestClock(Date.now()), async (relayUrl) => {
    proxy = await startLegacyRelayProxy(relayUrl, keepInfo);
    return proxy.url;
  });
  return { world, proxy: proxy ?? assert.fail('no proxy') };
}

/** `peer` as `node` pinned it, but with no enc key known yet. */
function forgetEncKey(node: HostNode, peer: string): void {
  const row = node.store.peers.get(peer) ?? assert.fail(`no peer ${peer}`);
  node.store.peers.pin({ ...row, enc_pub: null, enc_sig: null }, node.nowMs());
}

async function sessionOk(node: HostNode): Promise<void> {
  const result = await ensureSession(node);
  assert.ok(result.ok, JSON.stringify(result));
}

test('a relay refusing v2 enc-key ads with 404 gets the v1 ad; refreshes and new sessions go straight to v1', async () => {
  const { world, proxy } = await legacyWorld();
  const alpha = world.a.node;
  await sessionOk(world.b.node); // enrolled, for the lookup below; only alpha's ads are counted
  proxy.v2AdPosts = 0;
  proxy.v1AdPosts = 0;
  await sessionOk(alpha);
  assert.equal(alpha.store.relay.get()?.state, 'ok');
  assert.equal(alpha.store.relay.get()?.enc_ad_v1_only, 1);
  assert.deepEqual([proxy.v2AdPosts, proxy.v1AdPosts], [1, 1]);
  // the relay itself holds alpha's v1 ad (looked up by beta straight at the relay)
  const stored = await rawHost(world, world.b.node).api.encAd(alpha.keys.hostKey.publicKey);
  assert.equal(stored.status, 200);
  const body = isPlainObject(stored.body) ? stored.body : {};
  assert.equal(body.ad, undefined);
  assert.equal(body.enc_pub, alpha.keys.enc.publicKey);
  assert.ok(verifyEncAdV1('alpha', body.enc_pub, body.sig, alpha.keys.hostKey.publicKey));

  world.clock.now += ENC_AD_REFRESH_MS; // the daily refresh
  await sessionOk(alpha);
  assert.deepEqual([proxy.v2AdPosts, proxy.v1AdPosts], [1, 2]);
  alpha.store.relay.update({ session: null }); // a second session (info, then the ad again)
  await sessionOk(alpha);
  assert.deepEqual([proxy.v2AdPosts, proxy.v1AdPosts], [1, 3]);

  noteRelayReset(alpha, alpha.store.relay.get()?.epoch ?? '', 'epoch');
  assert.equal(alpha.store.relay.get()?.enc_ad_v1_only, 0, 'a new epoch may be an upgraded relay');
  await sessionOk(alpha);
  assert.deepEqual([proxy.v2AdPosts, proxy.v1AdPosts], [2, 4]);
  // a relay change (here: the real relay, which takes v2 ads) forgets it too
  await setRelay(alpha, world.relay.url);
  assert.equal(alpha.store.relay.get()?.enc_ad_v1_only, 0);
  await sessionOk(alpha);
  const upgraded = await rawHost(world, world.b.node).api.encAd(alpha.keys.hostKey.publicKey);
  assert.ok(isPlainObject(upgraded.body) && isPlainObject(upgraded.body.ad), 'a v2 ad is stored now');
  assert.equal(proxy.v1AdPosts, 4);
});

for (const status of [404, 410]) {
  test(`a relay answering ${status} to the v1 ad too is not asked again before the daily refresh`, async () => {
    const { world, proxy } = await legacyWorld();
    const alpha = world.a.node;
    proxy.v1Status = status;
    await sessionOk(alpha);
    assert.deepEqual([proxy.v2AdPosts, proxy.v1AdPosts], [1, 1]);
    assert.equal(alpha.store.relay.get()?.enc_ad_v1_only, 0, 'not remembered as a v1 relay');
    for (let i = 0; i < 3; i++) {
      world.clock.now += 10 * 60_000; // past any backoff
      await sessionOk(alpha);
    }
    assert.equal(proxy.v1AdPosts, 1, 'no republish on later ticks');
    world.clock.now += ENC_AD_REFRESH_MS;
    alpha.store.relay.update({ session: null }); // the daily refresh, in a new session (info first)
    await sessionOk(alpha);
    assert.deepEqual([proxy.v2AdPosts, proxy.v1AdPosts], [2, 2], 'the daily refresh asks again, v2 first');
  });
}

test('a relay whose info shows it knows v2 ads gets no v1 ad for its 404', async () => {
  const { world, proxy } = await legacyWorld(true);
  const result = await ensureSession(world.a.node);
  assert.equal(result.ok, false);
  assert.equal(world.a.node.store.relay.get()?.state, 'enc-ad-failed');
  assert.equal(world.a.node.store.relay.get()?.enc_ad_v1_only, 0);
  assert.equal(proxy.v1AdPosts, 0);
});

test('doctor: a relay whose info has no enc_ad member is ok, with a note', async () => {
  const { world } = await legacyWorld();
  await tick(world.a);
  const report = await runDoctor(world.a.node.home, () => world.clock.now);
  const relay = report.checks.find((c) => c.check === 'relay') ?? assert.fail('no relay check');
  assert.equal(relay.level, 'ok', relay.detail);
  assert.match(relay.detail, /^ok: .*; relay predates signed enc-key ads \(v1 ad published\); it holds /);
});

test('two hosts on cut networks exchange mail both ways through an older relay, one learning the enc key from its v1 lookup', async () => {
  const { world } = await legacyWorld();
  forgetEncKey(world.a.node, 'beta');
  assert.throws(() => sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'too early', body: 'x' }), /no enc key/);
  await tick(world.b);
  // The daemon's tick asks the LAN for the missing key (cut), then the relay's v1 lookup.
  await tick(world.a);
  assert.equal(world.a.node.store.peers.get('beta')?.enc_pub, world.b.node.keys.enc.publicKey);
  assert.ok(world.a.log.includes('fetched the enc key of beta through the relay'), world.a.log.join(' | '));

  const there = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'via the older relay', body: 'x' }).id;
  await tickUntilRow(world, world.a, there, 'relay-accepted');
  await tick(world.b);
  assert.deepEqual(
    listInbox(world.b.node, 'bob').map((m) => m.id),
    [there],
  );
  const back = sendMail(world.b.node, { from: 'bob', to: ['ann@alpha'], subject: 'and back', body: 'y' }).id;
  await tickUntilRow(world, world.b, back, 'relay-accepted');
  await tick(world.a);
  assert.deepEqual(
    listInbox(world.a.node, 'ann').map((m) => m.id),
    [back],
  );
});

test('a v1 lookup answer is taken only signed by the pinned key, and never over an enc key we hold', () => {
  const clock = new TestClock();
  const alpha = makeHost('alpha', clock);
  const beta = makeHost('beta', clock);
  pin(alpha, beta, 'http://127.0.0.1:9');
  const betaEnc = beta.keys.enc.publicKey;
  const answer = { host: 'beta', host_pubkey: beta.keys.hostKey.publicKey, enc_pub: betaEnc, sig: signEncAdV1('beta', betaEnc, beta.keys.hostKey) };
  const held = alpha.store.peers.get('beta') ?? assert.fail('no peer');
  assert.throws(() => acceptPeerEncAdV1(alpha, held, answer), /cannot replace the enc key we hold/);

  forgetEncKey(alpha, 'beta');
  const peer = alpha.store.peers.get('beta') ?? assert.fail('no peer');
  const stranger = generateSigningKey();
  assert.throws(() => acceptPeerEncAdV1(alpha, peer, { ...answer, sig: signEncAdV1('beta', betaEnc, stranger) }), /not signed by its pinned key/);
  assert.throws(() => acceptPeerEncAdV1(alpha, peer, { ...answer, host_pubkey: stranger.publicKey }), /not signed by its pinned key/);
  assert.throws(() => acceptPeerEncAdV1(alpha, peer, { ...answer, host: 'gamma' }), /not signed by its pinned key/);
  assert.equal(acceptPeerEncAdV1(alpha, peer, answer), betaEnc);
});
