// Encryption-key advertisements on the relay (protocol.md §3.8, §7.12, §7.16; design §2).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateEncKeyPair, generateSigningKey, signingKeyFromSeed, type SigningKey } from '../../src/protocol/keys.ts';
import { toBase64 } from '../../src/protocol/base64.ts';
import { signEncAdV1, signEncAdV2, type EncAdV2 } from '../../src/protocol/records/enc-ad.ts';
import { enrolledHost, testHost, signedEncAd, signedRotation, startTestRelay, type TestHost, type TestRelay } from '../helpers/relay-fixture.ts';

const DAY = 86_400_000;

function adOf(host: TestHost, iatMs: number, expMs = iatMs + 30 * DAY, encPub = host.enc.publicKey): EncAdV2 {
  return signedEncAd(host, iatMs, expMs, encPub).ad;
}

function publishV2(host: TestHost, ad: unknown, sig: unknown) {
  return host.api.call('POST', '/v2/relay/enc-key', { ad, sig });
}

/** The first key from fixed seeds whose base64 public key holds a `+` (deterministic). */
function keyWithPlus(): SigningKey {
  for (let i = 0; ; i++) {
    const key = signingKeyFromSeed(toBase64(Buffer.alloc(32, i))) as SigningKey;
    if (key.publicKey.includes('+')) return key;
  }
}

async function hostWithPlus(relay: TestRelay): Promise<TestHost> {
  const host = testHost(relay, 'desk', keyWithPlus());
  assert.equal((await host.api.enrol()).status, 200);
  return host;
}

test('v2: publish, then look up by key, with + percent-encoded and also arriving as a space', async () => {
  const relay = await startTestRelay();
  const owner = await hostWithPlus(relay);
  const reader = await enrolledHost(relay, 'laptop');
  const ad = adOf(owner, relay.clock.now);
  const sig = signEncAdV2(ad, owner.key);
  assert.deepEqual((await publishV2(owner, ad, sig)).body, { ok: true });

  const expected = { host: 'desk', host_pubkey: owner.key.publicKey, enc_pub: owner.enc.publicKey, ad, ad_sig: sig };
  for (const spelled of [encodeURIComponent(owner.key.publicKey), owner.key.publicKey.replaceAll('/', '%2F').replaceAll('=', '%3D')]) {
    const answer = await reader.api.call('GET', `/v2/relay/enc-key?pubkey=${spelled}`);
    assert.deepEqual([answer.status, answer.body], [200, expected], spelled);
  }
  assert.ok(owner.key.publicKey.includes('+'), 'the second spelling sent a raw +, which a query decodes as a space');

  const unknown = await reader.api.call('GET', `/v2/relay/enc-key?pubkey=${encodeURIComponent(generateSigningKey().publicKey)}`);
  assert.deepEqual([unknown.status, unknown.body['error']], [404, 'unknown host']);
  assert.equal((await reader.api.call('GET', '/v2/relay/enc-key?pubkey=junk')).status, 400);
  const noAd = await reader.api.call('GET', `/v2/relay/enc-key?pubkey=${encodeURIComponent(reader.key.publicKey)}`);
  assert.equal(noAd.status, 404, 'an enrolled host without an ad');
});

test('v2 refusals answer 400 "enc-key ad refused: <reason>"', async () => {
  const relay = await startTestRelay();
  const owner = await enrolledHost(relay, 'desk');
  const other = await enrolledHost(relay, 'laptop');
  const now = relay.clock.now;
  const good = adOf(owner, now);
  const cases: Array<[string, unknown, unknown]> = [
    ['malformed', { ...good, extra: 1 }, signEncAdV2(good, owner.key)],
    ['malformed', { ...good, enc_pub: 'nope' }, 'x'],
    ['malformed', undefined, undefined],
    ["not the caller's own ad", adOf(other, now), signEncAdV2(adOf(other, now), other.key)],
    ['iat is in the future', adOf(owner, now + 5 * 60_000 + 1), signEncAdV2(adOf(owner, now + 5 * 60_000 + 1), owner.key)],
    ['expired', adOf(owner, now - 2 * DAY, now), signEncAdV2(adOf(owner, now - 2 * DAY, now), owner.key)],
    ['lifetime over 90 days', adOf(owner, now, now + 90 * DAY + 1), signEncAdV2(adOf(owner, now, now + 90 * DAY + 1), owner.key)],
    ['bad signature', good, signEncAdV2(good, other.key)],
  ];
  for (const [reason, ad, sig] of cases) {
    const answer = await publishV2(owner, ad, sig);
    assert.deepEqual([answer.status, answer.body['error']], [400, `enc-key ad refused: ${reason}`], reason);
  }

  assert.equal((await publishV2(owner, good, signEncAdV2(good, owner.key))).status, 200);
  for (const iat of [now, now - 1]) {
    const stale = adOf(owner, iat, now + 10 * DAY, generateEncKeyPair().publicKey);
    const answer = await publishV2(owner, stale, signEncAdV2(stale, owner.key));
    assert.deepEqual([answer.status, answer.body['error']], [400, 'enc-key ad refused: not newer than the stored ad']);
  }
  const looked = await other.api.call('GET', `/v2/relay/enc-key?pubkey=${encodeURIComponent(owner.key.publicKey)}`);
  assert.equal(looked.body['enc_pub'], owner.enc.publicKey, 'the refused ads changed nothing');

  relay.clock.advance(1_000);
  const newer = adOf(owner, relay.clock.now, relay.clock.now + DAY, generateEncKeyPair().publicKey);
  assert.equal((await publishV2(owner, newer, signEncAdV2(newer, owner.key))).status, 200);
});

test('v1: publish and look up by name (case-insensitively); a v1 ad it will not store answers 410, never 400', async () => {
  const relay = await startTestRelay();
  const owner = await enrolledHost(relay, 'desk');
  const reader = await enrolledHost(relay, 'laptop');
  const sig = signEncAdV1('desk', owner.enc.publicKey, owner.key);
  assert.deepEqual((await owner.api.call('POST', '/v1/relay/enc-key', { enc_pub: owner.enc.publicKey, sig })).body, { ok: true });
  for (const name of ['desk', 'DESK']) {
    const answer = await reader.api.call('GET', `/v1/relay/enc-key?host=${name}`);
    assert.deepEqual([answer.status, answer.body], [200, { host: 'desk', host_pubkey: owner.key.publicKey, enc_pub: owner.enc.publicKey, sig }]);
  }
  const forged = await owner.api.call('POST', '/v1/relay/enc-key', { enc_pub: owner.enc.publicKey, sig: signEncAdV1('desk', owner.enc.publicKey, reader.key) });
  assert.deepEqual([forged.status, forged.body['code']], [410, 'ENC_AD_V1_RETIRED']);
  const malformed = await owner.api.call('POST', '/v1/relay/enc-key', { enc_pub: 'x', sig });
  assert.deepEqual([malformed.status, malformed.body['code']], [410, 'ENC_AD_V1_RETIRED']);
  assert.equal((await reader.api.call('GET', '/v1/relay/enc-key?host=nobody')).status, 404);
});

test('v1 after v2: the same enc key is stored beside the v2 ad (you.enc_ad.v1); another key answers 410 and changes nothing', async () => {
  const relay = await startTestRelay();
  const owner = await enrolledHost(relay, 'desk');
  const reader = await enrolledHost(relay, 'laptop');
  const ad = adOf(owner, relay.clock.now);
  assert.equal((await publishV2(owner, ad, signEncAdV2(ad, owner.key))).status, 200);
  const encAd = async () => ((await owner.api.info()).body['you'] as { enc_ad: Record<string, unknown> }).enc_ad;
  assert.deepEqual(await encAd(), { enc_pub: owner.enc.publicKey, exp: ad.exp }, 'no v1 yet');
  const sig = signEncAdV1('desk', owner.enc.publicKey, owner.key);
  const v1 = await owner.api.call('POST', '/v1/relay/enc-key', { enc_pub: owner.enc.publicKey, sig });
  assert.deepEqual([v1.status, v1.body], [200, { ok: true }]);
  assert.deepEqual(await encAd(), { enc_pub: owner.enc.publicKey, exp: ad.exp, v1: owner.enc.publicKey });
  const byName = await reader.api.call('GET', '/v1/relay/enc-key?host=desk');
  assert.equal(byName.body['sig'], sig, 'v1 readers get the v1 signature');
  assert.deepEqual(byName.body['ad'], ad);

  const other = generateEncKeyPair().publicKey;
  const rollback = await owner.api.call('POST', '/v1/relay/enc-key', { enc_pub: other, sig: signEncAdV1('desk', other, owner.key) });
  assert.deepEqual([rollback.status, rollback.body['code']], [410, 'ENC_AD_V1_RETIRED']);
  assert.deepEqual(await encAd(), { enc_pub: owner.enc.publicKey, exp: ad.exp, v1: owner.enc.publicKey });

  // a newer v2 ad keeps the v1 signature while it names the same key, and drops it for a new key
  relay.clock.advance(1000);
  const again = adOf(owner, relay.clock.now);
  assert.equal((await publishV2(owner, again, signEncAdV2(again, owner.key))).status, 200);
  assert.equal((await encAd())['v1'], owner.enc.publicKey);
  relay.clock.advance(1000);
  const moved = adOf(owner, relay.clock.now, undefined, other);
  assert.equal((await publishV2(owner, moved, signEncAdV2(moved, owner.key))).status, 200);
  assert.equal((await encAd())['v1'], undefined);
});

test('an AgentMBX host republishing while enc_ad.v1 differs from its enc key stops after one publish', async () => {
  const relay = await startTestRelay();
  const host = await enrolledHost(relay, 'desk');
  // §3.1: such a host posts the v2 ad and then the v1 pair while `you.enc_ad.v1` differs from its
  // enc key, unless the v1 publish answered 404 or 410.
  let publishes = 0;
  let v1Retired = false;
  for (let tick = 0; tick < 5; tick++) {
    const you = (await host.api.info()).body['you'] as { enc_ad: { v1?: string } | null };
    if (v1Retired || you.enc_ad?.v1 === host.enc.publicKey) continue;
    publishes += 1;
    relay.clock.advance(1000);
    const published = signedEncAd(host, relay.clock.now);
    assert.equal((await host.api.call('POST', '/v2/relay/enc-key', published)).status, 200);
    const v1 = await host.api.call('POST', '/v1/relay/enc-key', { enc_pub: host.enc.publicKey, sig: signEncAdV1('desk', host.enc.publicKey, host.key) });
    assert.ok(v1.status === 200 || v1.status === 404 || v1.status === 410, `never a 400 (got ${v1.status})`);
    v1Retired = v1.status === 404 || v1.status === 410;
  }
  assert.equal(publishes, 1);
});

test('an ambiguous v1 name (two live enrolments, no account) answers 404 "unknown host"', async () => {
  const relay = await startTestRelay();
  const reader = await enrolledHost(relay, 'laptop');
  for (const twin of [await enrolledHost(relay, 'macbook'), await enrolledHost(relay, 'MacBook')]) {
    const ad = adOf(twin, relay.clock.now);
    assert.equal((await publishV2(twin, ad, signEncAdV2(ad, twin.key))).status, 200);
  }
  const answer = await reader.api.call('GET', '/v1/relay/enc-key?host=macbook');
  assert.deepEqual([answer.status, answer.body], [404, { error: 'unknown host' }]);
});

test('a revoked host answers 404 by key and by name', async () => {
  const relay = await startTestRelay();
  const owner = await enrolledHost(relay, 'desk');
  const reader = await enrolledHost(relay, 'laptop');
  const ad = adOf(owner, relay.clock.now);
  assert.equal((await publishV2(owner, ad, signEncAdV2(ad, owner.key))).status, 200);
  const byKey = `/v2/relay/enc-key?pubkey=${encodeURIComponent(owner.key.publicKey)}`;
  assert.equal((await reader.api.call('GET', byKey)).status, 200);

  const rotation = signedRotation('desk', owner.key, generateSigningKey(), relay.clock.now);
  assert.equal((await reader.api.call('POST', '/v2/relay/rotate', { rotation }, false)).status, 200);
  assert.deepEqual((await reader.api.call('GET', byKey)).body, { error: 'unknown host' });
  assert.equal((await reader.api.call('GET', '/v1/relay/enc-key?host=desk')).status, 404, 'the new key has published no ad yet');
});
