// The relay hop (protocol.md §2, §7.15): what authenticates a caller and every way a hop is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateSigningKey, type SigningKey } from '../../src/protocol/keys.ts';
import { HOP_MAX_SKEW_MS, relayHopString, signRelayHop } from '../../src/protocol/relay-hop.ts';
import { CROWDED_NAME_HOSTS } from '../../src/relay/config.ts';
import { enrolledHost, testHost, signedEncAd, signedRotation, startTestRelay, type TestHost, type TestRelay } from '../helpers/relay-fixture.ts';

type Answer = { status: number; body: Record<string, unknown> };
const BAD_HOP = { error: 'bad relay hop' };

async function send(relay: TestRelay, method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const response = await fetch(`${relay.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Hop headers for `signed` (what the signature covers), with any header overridden afterwards. */
function hop(
  key: SigningKey,
  host: string,
  signed: { method: string; path: string; body?: string; ts: string },
  override: Record<string, string | undefined> = {},
): Record<string, string> {
  const headers: Record<string, string | undefined> = {
    'x-mbx-host': host,
    'x-mbx-key': key.publicKey,
    'x-mbx-ts': signed.ts,
    'x-mbx-sig': key.sign(relayHopString(signed.method, signed.path, signed.ts, signed.body ?? '')),
    ...override,
  };
  return Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => e[1] !== undefined));
}

const PULL = '/v2/relay/items?after=0';

async function publishAd(relay: TestRelay, host: TestHost): Promise<void> {
  assert.equal((await host.api.call('POST', '/v2/relay/enc-key', signedEncAd(host, relay.clock.now))).status, 200);
}

test('a well-formed hop is accepted (the baseline the refusals below differ from)', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const ts = String(relay.clock.now);
  assert.equal((await send(relay, 'GET', PULL, hop(a.key, 'laptop', { method: 'GET', path: PULL, ts }))).status, 200);
  for (const skew of [HOP_MAX_SKEW_MS, -HOP_MAX_SKEW_MS]) {
    const edge = String(relay.clock.now + skew);
    assert.equal((await send(relay, 'GET', PULL, hop(a.key, 'laptop', { method: 'GET', path: PULL, ts: edge }))).status, 200, `skew ${skew}`);
  }
});

test('missing headers → 401 bad relay hop', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const signed = { method: 'GET', path: PULL, ts: String(relay.clock.now) };
  for (const missing of [['x-mbx-ts'], ['x-mbx-sig'], ['x-mbx-key', 'x-mbx-host']]) {
    const headers = hop(a.key, 'laptop', signed, Object.fromEntries(missing.map((h) => [h, undefined])));
    const answer = await send(relay, 'GET', PULL, headers);
    assert.deepEqual([answer.status, answer.body], [401, BAD_HOP], missing.join('+'));
  }
  assert.deepEqual((await send(relay, 'GET', PULL, {})).body, BAD_HOP);
});

test('a bad signature, a skew over 5 minutes either way, a ts that is not a number → 401', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const now = relay.clock.now;
  const cases: Array<[string, Record<string, string>]> = [
    ['signed by another key', hop(generateSigningKey(), 'laptop', { method: 'GET', path: PULL, ts: String(now) }, { 'x-mbx-key': a.key.publicKey })],
    ['garbage signature', hop(a.key, 'laptop', { method: 'GET', path: PULL, ts: String(now) }, { 'x-mbx-sig': 'not-a-signature' })],
    ['signed as POST', hop(a.key, 'laptop', { method: 'POST', path: PULL, ts: String(now) })],
  ];
  for (const skew of [HOP_MAX_SKEW_MS + 1, -(HOP_MAX_SKEW_MS + 1)]) {
    cases.push([`skew ${skew}`, hop(a.key, 'laptop', { method: 'GET', path: PULL, ts: String(now + skew) })]);
  }
  for (const ts of ['NaN', '', ' ', 'abc', 'Infinity', '-Infinity', `${now}abc`]) {
    cases.push([`ts ${JSON.stringify(ts)}`, hop(a.key, 'laptop', { method: 'GET', path: PULL, ts })]);
  }
  // a ts signed as one value and sent as another
  cases.push(['ts changed after signing', hop(a.key, 'laptop', { method: 'GET', path: PULL, ts: String(now) }, { 'x-mbx-ts': String(now + 1) })]);
  for (const [name, headers] of cases) {
    const answer = await send(relay, 'GET', PULL, headers);
    assert.deepEqual([answer.status, answer.body], [401, BAD_HOP], name);
  }
});

test('the signature covers the query and the body: tampering with either → 401', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const ts = String(relay.clock.now);
  const query = await send(relay, 'GET', '/v2/relay/items?after=5', hop(a.key, 'laptop', { method: 'GET', path: PULL, ts }));
  assert.deepEqual([query.status, query.body], [401, BAD_HOP]);
  const dropped = await send(relay, 'GET', '/v2/relay/items', hop(a.key, 'laptop', { method: 'GET', path: PULL, ts }));
  assert.deepEqual([dropped.status, dropped.body], [401, BAD_HOP]);

  const signedBody = '{"items":[]}';
  const ok = await send(relay, 'POST', '/v2/relay/items', hop(a.key, 'laptop', { method: 'POST', path: '/v2/relay/items', body: signedBody, ts }), signedBody);
  assert.equal(ok.status, 200);
  for (const sent of ['{"items": []}', '{"items":[{}]}', '']) {
    const answer = await send(relay, 'POST', '/v2/relay/items', hop(a.key, 'laptop', { method: 'POST', path: '/v2/relay/items', body: signedBody, ts }), sent);
    assert.deepEqual([answer.status, answer.body], [401, BAD_HOP], JSON.stringify(sent));
  }
});

test('an unknown key or a revoked key → 401', async () => {
  const relay = await startTestRelay();
  const stranger = testHost(relay, 'laptop');
  const ts = String(relay.clock.now);
  const unknown = await send(relay, 'GET', PULL, hop(stranger.key, 'laptop', { method: 'GET', path: PULL, ts }));
  assert.deepEqual([unknown.status, unknown.body], [401, BAD_HOP]);

  const old = await enrolledHost(relay, 'desk');
  const next = generateSigningKey();
  const rotation = signedRotation('desk', old.key, next, relay.clock.now);
  assert.equal((await old.api.call('POST', '/v2/relay/rotate', { rotation }, false)).status, 200);
  const revoked = await old.api.pull(0);
  assert.deepEqual([revoked.status, revoked.body], [401, BAD_HOP]);
  // nor by name on v1: the revoked key no longer carries the name
  const byName = await send(
    relay,
    'GET',
    '/v1/relay/enc-key?host=desk',
    hop(old.key, 'desk', { method: 'GET', path: '/v1/relay/enc-key', ts }, { 'x-mbx-key': undefined }),
  );
  assert.deepEqual([byName.status, byName.body], [401, BAD_HOP]);
  // the new key is the host now
  const rotated = testHost(relay, 'desk', next);
  assert.equal((await rotated.api.pull(0)).status, 200);
});

test('a v1 call without x-mbx-key is found by its name, case-insensitively', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'Laptop');
  const b = await enrolledHost(relay, 'desk');
  await publishAd(relay, b);
  const ts = String(relay.clock.now);
  for (const name of ['Laptop', 'laptop', 'LAPTOP']) {
    // v1 signs the path without its query (a kept v1 weakness)
    const headers = hop(a.key, name, { method: 'GET', path: '/v1/relay/enc-key', ts }, { 'x-mbx-key': undefined });
    const answer = await send(relay, 'GET', '/v1/relay/enc-key?host=desk', headers);
    assert.equal(answer.status, 200, name);
    assert.equal(answer.body['host_pubkey'], b.key.publicKey);
  }
  const wrongName = hop(a.key, 'desk', { method: 'GET', path: '/v1/relay/enc-key', ts }, { 'x-mbx-key': undefined });
  assert.deepEqual((await send(relay, 'GET', '/v1/relay/enc-key?host=desk', wrongName)).body, BAD_HOP, 'only enrolments of that name are tried');
});

test(`a name carried by ${CROWDED_NAME_HOSTS + 1} live enrolments refuses v1 hops by name`, async () => {
  const relay = await startTestRelay({ config: { enrol_per_minute: 1_000 } });
  const target = await enrolledHost(relay, 'desk');
  await publishAd(relay, target);
  const crowd: TestHost[] = [];
  for (let i = 0; i < CROWDED_NAME_HOSTS; i++) crowd.push(await enrolledHost(relay, 'macbook'));
  const v1 = (host: TestHost) =>
    hop(host.key, 'macbook', { method: 'GET', path: '/v1/relay/enc-key', ts: String(relay.clock.now) }, { 'x-mbx-key': undefined });
  const last = crowd.at(-1) as TestHost;
  assert.equal((await send(relay, 'GET', '/v1/relay/enc-key?host=desk', v1(last))).status, 200, `${CROWDED_NAME_HOSTS} still resolve`);

  const extra = await enrolledHost(relay, 'MACBOOK');
  for (const host of [crowd[0] as TestHost, last, extra]) {
    const answer = await send(relay, 'GET', '/v1/relay/enc-key?host=desk', v1(host));
    assert.deepEqual([answer.status, answer.body], [401, BAD_HOP]);
  }
  // v2 (by key) is unaffected by the crowd
  assert.equal((await extra.api.pull(0)).status, 200);
});

test("a caller found by x-mbx-key is that key's host whatever x-mbx-host says", async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  await enrolledHost(relay, 'desk');
  const ts = String(relay.clock.now);
  const headers = { ...signRelayHop({ method: 'GET', path: '/v2/relay/info', rawBody: '' }, 'desk', a.key, relay.clock.now) };
  const answer = await send(relay, 'GET', '/v2/relay/info', headers);
  assert.deepEqual(answer.body['you'] as { host: string; pubkey: string }, {
    host: 'laptop',
    pubkey: a.key.publicKey,
    head_seq: 0,
    acked_through: 0,
    enc_ad: null,
  });
  // and a name that is not enrolled at all changes nothing either
  const unenrolledName = await send(relay, 'GET', PULL, hop(a.key, 'nobody', { method: 'GET', path: PULL, ts }));
  assert.equal(unenrolledName.status, 200);
});
