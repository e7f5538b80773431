// Enrolment over a real relay (protocol.md §3.2, §6, §7.4, §7.8; design §2, §8): challenges, the
// signed enrol body, authorities, names as labels, revocation, per-address rate and body caps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toBase64 } from '../../src/protocol/base64.ts';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { generateSigningKey, type SigningKey } from '../../src/protocol/keys.ts';
import type { EnrolmentAuthority, EnrolmentDecision, EnrolmentRequest } from '../../src/relay/authority/enrolment-authority.ts';
import { CHALLENGE_LIFE_MS, ENROL_BODY_MAX_BYTES } from '../../src/relay/config.ts';
import { tempDir } from '../helpers/processes.ts';
import {
  PER_PROCESS_ENROLMENT_RATE,
  enrolledHost,
  envelopeItem,
  testHost,
  sealedEnvelope,
  signedRotation,
  startTestRelay,
  type TestRelay,
} from '../helpers/relay-fixture.ts';
import { TestClock } from '../helpers/clock.ts';

type Answer = { status: number; body: Record<string, unknown> };

async function post(relay: TestRelay, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${relay.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function challenge(relay: TestRelay, host: string, key: SigningKey): Promise<string> {
  const answer = await post(relay, '/v1/relay/challenge', { host, pubkey: key.publicKey });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body['challenge'] as string;
}

function enrolBody(key: SigningKey, host: string, issued: string, ownerFp = '', proof?: unknown) {
  const sig = key.sign(canonicalJson({ v: 1, challenge: issued, host, pubkey: key.publicKey, owner_fp: ownerFp }));
  return { host, pubkey: key.publicKey, owner_fp: ownerFp, sig, ...(proof === undefined ? {} : { proof }) };
}

async function enrol(relay: TestRelay, host: string, key: SigningKey, ownerFp = '', proof?: unknown): Promise<Answer> {
  return post(relay, '/v1/relay/enrol', enrolBody(key, host, await challenge(relay, host, key), ownerFp, proof));
}

/** A stub account authority: the proof is the account name; 'deny' or no proof is refused, 'down' cannot be decided. */
class AccountAuthority implements EnrolmentAuthority {
  readonly name = 'account-token';
  readonly strength = 1;
  async authorize(request: EnrolmentRequest): Promise<EnrolmentDecision> {
    if (request.proof === 'down') return { ok: false, reason: 'the account service is unreachable', unavailable: true };
    if (typeof request.proof !== 'string' || request.proof === 'deny') return { ok: false, reason: 'no valid account token' };
    return { ok: true, account: request.proof, org: null };
  }
}

test('malformed host or public key → 400 on challenge and enrol', async () => {
  const relay = await startTestRelay();
  const key = generateSigningKey();
  const badHosts: unknown[] = [undefined, '', '-laptop', 'has space', 'a'.repeat(64), 'lap/top', 7];
  const badKeys: unknown[] = [undefined, '', 'abc', toBase64(Buffer.alloc(33, 1)), key.publicKey.replace(/=$/, ''), `${key.publicKey.slice(0, 42)}B=`];
  for (const host of badHosts) {
    assert.equal((await post(relay, '/v1/relay/challenge', { host, pubkey: key.publicKey })).status, 400, `host ${String(host)}`);
    assert.equal((await post(relay, '/v1/relay/enrol', { host, pubkey: key.publicKey, owner_fp: '', sig: 'x' })).status, 400);
  }
  for (const pubkey of badKeys) {
    const answer = await post(relay, '/v1/relay/challenge', { host: 'laptop', pubkey });
    assert.equal(answer.status, 400, `key ${String(pubkey)}`);
    assert.match(answer.body['error'] as string, /public key/);
    assert.equal((await post(relay, '/v1/relay/enrol', { host: 'laptop', pubkey, owner_fp: '', sig: 'x' })).status, 400);
  }
  assert.equal((await post(relay, '/v1/relay/challenge', 'not json')).status, 400);
  // the longest legal name is fine
  assert.equal((await enrol(relay, `A${'b'.repeat(62)}`, key)).status, 200);
});

test('owner_fp: at most 64 safe characters, required; sig required', async () => {
  const relay = await startTestRelay();
  for (const ownerFp of ['x'.repeat(65), 'bad fp', 'fp!', 7, null]) {
    const key = generateSigningKey();
    const issued = await challenge(relay, 'laptop', key);
    const body = { ...enrolBody(key, 'laptop', issued), owner_fp: ownerFp };
    const answer = await post(relay, '/v1/relay/enrol', body);
    assert.equal(answer.status, 400, `owner_fp ${String(ownerFp)}`);
    assert.match(answer.body['error'] as string, /owner_fp/);
  }
  const key = generateSigningKey();
  const { sig: _sig, ...unsigned } = enrolBody(key, 'laptop', await challenge(relay, 'laptop', key));
  assert.equal((await post(relay, '/v1/relay/enrol', unsigned)).status, 400);
  for (const ownerFp of ['', '3f2a-09bc-77d1-e004', 'a.b_c-D'.padEnd(64, 'z')]) {
    assert.equal((await enrol(relay, 'laptop', generateSigningKey(), ownerFp)).status, 200, `owner_fp ${ownerFp}`);
  }
});

test('no challenge, an expired challenge, a bad signature → 401', async () => {
  const relay = await startTestRelay();
  const key = generateSigningKey();
  const none = await post(relay, '/v1/relay/enrol', enrolBody(key, 'laptop', 'never-issued'));
  assert.equal(none.status, 401);
  assert.match(none.body['error'] as string, /no open challenge/);

  const stale = await challenge(relay, 'laptop', key);
  relay.clock.advance(CHALLENGE_LIFE_MS);
  assert.equal((await post(relay, '/v1/relay/enrol', enrolBody(key, 'laptop', stale))).status, 401, 'expired after 5 minutes');

  const issued = await challenge(relay, 'laptop', key);
  const forged = enrolBody(generateSigningKey(), 'laptop', issued);
  const bad = await post(relay, '/v1/relay/enrol', { ...forged, pubkey: key.publicKey });
  assert.equal(bad.status, 401);
  assert.match(bad.body['error'] as string, /signature/);

  // the signature covers host and owner_fp too
  const signedOther = enrolBody(key, 'laptop', await challenge(relay, 'laptop', key), 'mine');
  assert.equal((await post(relay, '/v1/relay/enrol', { ...signedOther, owner_fp: 'theirs' })).status, 401);

  // just before the five minutes, it still works
  const fresh = await challenge(relay, 'laptop', key);
  relay.clock.advance(CHALLENGE_LIFE_MS - 1);
  assert.equal((await post(relay, '/v1/relay/enrol', enrolBody(key, 'laptop', fresh))).status, 200);
});

test('challenges are single use: a replayed enrol body, even a successful one, → 401', async () => {
  const relay = await startTestRelay();
  const key = generateSigningKey();
  const body = enrolBody(key, 'laptop', await challenge(relay, 'laptop', key));
  assert.equal((await post(relay, '/v1/relay/enrol', body)).status, 200);
  const replay = await post(relay, '/v1/relay/enrol', body);
  assert.equal(replay.status, 401);

  // a failed attempt burns the challenge as well
  const other = generateSigningKey();
  const issued = await challenge(relay, 'desk', other);
  assert.equal((await post(relay, '/v1/relay/enrol', { ...enrolBody(other, 'desk', issued), sig: body.sig })).status, 401);
  assert.equal((await post(relay, '/v1/relay/enrol', enrolBody(other, 'desk', issued))).status, 401);
});

test('a new challenge replaces the old one', async () => {
  const relay = await startTestRelay();
  const key = generateSigningKey();
  const first = await challenge(relay, 'laptop', key);
  const second = await challenge(relay, 'laptop', key);
  assert.notEqual(first, second);
  assert.equal((await post(relay, '/v1/relay/enrol', enrolBody(key, 'laptop', first))).status, 401, 'the old challenge is gone');

  const third = await challenge(relay, 'laptop', key);
  await challenge(relay, 'laptop', key);
  assert.equal((await post(relay, '/v1/relay/enrol', enrolBody(key, 'laptop', third))).status, 401);
  const fifth = await challenge(relay, 'laptop', key);
  assert.equal((await post(relay, '/v1/relay/enrol', enrolBody(key, 'laptop', fifth))).status, 200);
});

test('enrolling an enrolled key again is idempotent and keeps its queue', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const env = sealedEnvelope(a, b, relay.clock.now);
  await a.api.push([envelopeItem(env.id, [{ host: b, wire: env.wire }])]);
  relay.clock.advance(1_000);
  assert.equal((await enrol(relay, 'desk', b.key)).status, 200);
  assert.equal((await enrol(relay, 'desk', b.key)).status, 200);
  const page = (await b.api.pull(0)).body as { items: Array<{ item_id: string }> };
  assert.deepEqual(
    page.items.map((i) => i.item_id),
    [env.id],
  );
});

test('names are labels shared across owners: each key receives only its own mail', async () => {
  const relay = await startTestRelay();
  const sender = await enrolledHost(relay, 'server');
  const mine = await enrolledHost(relay, 'macbook');
  const squatter = await enrolledHost(relay, 'macbook');
  const env = sealedEnvelope(sender, mine, relay.clock.now);
  const result = ((await sender.api.push([envelopeItem(env.id, [{ host: mine, wire: env.wire }])])).body['results'] as Array<{ status: string }>)[0];
  assert.equal(result?.status, 'accepted');
  assert.equal(((await mine.api.pull(0)).body['items'] as unknown[]).length, 1);
  const theirs = (await squatter.api.pull(0)).body as { items: unknown[]; head_seq: number };
  assert.deepEqual([theirs.items.length, theirs.head_seq], [0, 0], "the squatter never sees another host's mail");
  // a third enrolment of the name is not refused either (names are never locked out without an account)
  assert.equal((await enrol(relay, 'MacBook', generateSigningKey())).status, 200);
});

test('inside a proven account names are unique case-insensitively (409 NAME_TAKEN); other accounts are free', async () => {
  const relay = await startTestRelay({ authority: new AccountAuthority() });
  assert.equal((await enrol(relay, 'macbook', generateSigningKey(), '', 'acct-1')).status, 200);
  const taken = await enrol(relay, 'MacBook', generateSigningKey(), '', 'acct-1');
  assert.equal(taken.status, 409);
  assert.equal(taken.body['code'], 'NAME_TAKEN');
  assert.equal((await enrol(relay, 'MacBook', generateSigningKey(), '', 'acct-2')).status, 200);
});

test('an authority refusal is 403 DENIED with its reason', async () => {
  const relay = await startTestRelay({ authority: new AccountAuthority() });
  for (const proof of [undefined, 'deny']) {
    const denied = await enrol(relay, 'laptop', generateSigningKey(), '', proof);
    assert.equal(denied.status, 403);
    assert.equal(denied.body['code'], 'DENIED');
    assert.match(denied.body['error'] as string, /no valid account token/);
  }
});

test('an authority that cannot decide right now → 503, and nothing is enrolled', async () => {
  const relay = await startTestRelay({ authority: new AccountAuthority() });
  const key = generateSigningKey();
  const down = await enrol(relay, 'laptop', key, '', 'down');
  assert.equal(down.status, 503);
  assert.equal(down.body['code'], 'AUTHORITY_UNAVAILABLE');
  assert.match(down.body['error'] as string, /the account service is unreachable/);
  assert.equal((await testHost(relay, 'laptop', key).api.pull(0)).status, 401, 'not enrolled');
});

test('a key revoked by rotation stays revoked: re-enrolling answers 403 REVOKED', async () => {
  const relay = await startTestRelay();
  const old = await enrolledHost(relay, 'laptop');
  const rotation = signedRotation('laptop', old.key, generateSigningKey(), relay.clock.now);
  assert.equal((await post(relay, '/v2/relay/rotate', { rotation })).status, 200);
  const again = await enrol(relay, 'laptop', old.key);
  assert.equal(again.status, 403);
  assert.equal(again.body['code'], 'REVOKED');
  assert.equal((await enrol(relay, 'other-name', old.key)).status, 403, 'not under another name either');
});

test('a weaker authority never overwrites the account a stronger one recorded', async () => {
  const dir = tempDir();
  const clock = new TestClock();
  const key = generateSigningKey();
  const hosted = await startTestRelay({ dir, clock, authority: new AccountAuthority() });
  assert.equal((await enrol(hosted, 'macbook', key, '', 'acct-1')).status, 200);
  const relayPubkey = hosted.service.relayPubkey;
  await hosted.stop();

  const selfHosted = await startTestRelay({ dir, clock });
  clock.advance(1_000);
  assert.equal((await enrol(selfHosted, 'macbook', key)).status, 200);
  assert.equal(selfHosted.service.relayPubkey, relayPubkey, 'the same relay on the same store');
  const row = await selfHosted.service.core.context.store.read((tx) => tx.enrolments.get(key.publicKey));
  assert.equal(row?.account, 'acct-1');
  assert.equal(row?.authorizedBy, 'account-token');
});

test('the 31st challenge/enrol/rotate call from one address in a minute → 429; a minute later it is open again', PER_PROCESS_ENROLMENT_RATE, async () => {
  const relay = await startTestRelay();
  const key = generateSigningKey();
  for (let i = 0; i < 15; i++) assert.equal((await post(relay, '/v1/relay/challenge', { host: 'laptop', pubkey: key.publicKey })).status, 200);
  for (let i = 0; i < 10; i++) assert.equal((await post(relay, '/v1/relay/enrol', {})).status, 400);
  for (let i = 0; i < 5; i++) assert.equal((await post(relay, '/v2/relay/rotate', {})).status, 400);
  for (const path of ['/v1/relay/challenge', '/v1/relay/enrol', '/v2/relay/rotate']) {
    const limited = await post(relay, path, { host: 'laptop', pubkey: key.publicKey });
    assert.equal(limited.status, 429, path);
    assert.match(limited.body['error'] as string, /too many enrolment requests/);
  }
  relay.clock.advance(60_000);
  assert.equal((await post(relay, '/v1/relay/challenge', { host: 'laptop', pubkey: key.publicKey })).status, 200);
});

async function spend(relay: TestRelay, headers: (i: number) => Record<string, string>): Promise<void> {
  const pubkey = generateSigningKey().publicKey;
  for (let i = 0; i < 30; i++) assert.equal((await post(relay, '/v1/relay/challenge', { host: 'laptop', pubkey }, headers(i))).status, 200);
}

async function challengeStatus(relay: TestRelay, headers: Record<string, string>): Promise<number> {
  return (await post(relay, '/v1/relay/challenge', { host: 'laptop', pubkey: generateSigningKey().publicKey }, headers)).status;
}

test('--trust-proxy xff counts the rightmost X-Forwarded-For entry; spoofed left entries get no fresh budget', PER_PROCESS_ENROLMENT_RATE, async () => {
  const relay = await startTestRelay({ config: { trust_proxy: 'xff' } });
  await spend(relay, (i) => ({ 'x-forwarded-for': `10.9.9.${i}, 203.0.113.7` }));
  assert.equal(await challengeStatus(relay, { 'x-forwarded-for': '198.51.100.1, 203.0.113.7' }), 429);
  assert.equal(await challengeStatus(relay, { 'x-forwarded-for': '203.0.113.7' }), 429);
  assert.equal(await challengeStatus(relay, { 'x-forwarded-for': '203.0.113.7, 203.0.113.8' }), 200, 'another proxy-seen address');
  assert.equal(await challengeStatus(relay, { 'cf-connecting-ip': '192.0.2.1', 'x-forwarded-for': '203.0.113.7' }), 429, 'CF header ignored under xff');
});

test('an IPv6 client is counted per /64, an IPv4 client once however its address is written', PER_PROCESS_ENROLMENT_RATE, async () => {
  const relay = await startTestRelay({ config: { trust_proxy: 'xff' } });
  await spend(relay, (i) => ({ 'x-forwarded-for': `2001:db8:0:0:${(i + 1).toString(16)}::1` }));
  assert.equal(await challengeStatus(relay, { 'x-forwarded-for': '2001:db8::ffff' }), 429, 'another address of the same /64');
  assert.equal(await challengeStatus(relay, { 'x-forwarded-for': '2001:db8:0:1::1' }), 200, 'another /64');

  const forms = ['192.0.2.7', '192.0.2.7:40000', '::ffff:192.0.2.7', '[::ffff:192.0.2.7]:443'];
  await spend(relay, (i) => ({ 'x-forwarded-for': forms[i % forms.length] as string }));
  for (const form of forms) assert.equal(await challengeStatus(relay, { 'x-forwarded-for': form }), 429, form);
});

test('--trust-proxy cloudflare counts CF-Connecting-IP and ignores X-Forwarded-For', PER_PROCESS_ENROLMENT_RATE, async () => {
  const relay = await startTestRelay({ config: { trust_proxy: 'cloudflare' } });
  await spend(relay, (i) => ({ 'cf-connecting-ip': '192.0.2.1', 'x-forwarded-for': `10.0.0.${i}` }));
  assert.equal(await challengeStatus(relay, { 'cf-connecting-ip': '192.0.2.1', 'x-forwarded-for': '10.1.1.1' }), 429);
  assert.equal(await challengeStatus(relay, { 'cf-connecting-ip': '192.0.2.2' }), 200);
});

test('by default both proxy headers are ignored: the socket address counts', PER_PROCESS_ENROLMENT_RATE, async () => {
  const relay = await startTestRelay();
  await spend(relay, (i) => ({ 'cf-connecting-ip': `192.0.2.${i}`, 'x-forwarded-for': `10.0.0.${i}` }));
  assert.equal(await challengeStatus(relay, { 'cf-connecting-ip': '192.0.2.200', 'x-forwarded-for': '10.0.0.200' }), 429);
  assert.equal(await challengeStatus(relay, {}), 429);
});

test('an enrol, challenge or rotate body over 8 KiB → 413', async () => {
  const relay = await startTestRelay();
  const key = testHost(relay, 'laptop').key;
  const big = { host: 'laptop', pubkey: key.publicKey, owner_fp: '', sig: 'x', proof: 'p'.repeat(ENROL_BODY_MAX_BYTES) };
  for (const path of ['/v1/relay/enrol', '/v1/relay/challenge', '/v2/relay/rotate']) {
    const answer = await post(relay, path, big);
    assert.equal(answer.status, 413, path);
    assert.deepEqual(answer.body, { error: 'request body too large' });
  }
  // a proof just under the cap is read
  const issued = await challenge(relay, 'laptop', key);
  const fits = enrolBody(key, 'laptop', issued, '', 'p'.repeat(ENROL_BODY_MAX_BYTES - 400));
  assert.ok(JSON.stringify(fits).length <= ENROL_BODY_MAX_BYTES);
  assert.equal((await post(relay, '/v1/relay/enrol', fits)).status, 200);
});

test('live enrolments are capped: a new key over the cap → 503, a known key still re-enrols, a revocation frees a place', async () => {
  const relay = await startTestRelay({ maxLiveEnrolments: 2 });
  const one = await enrolledHost(relay, 'one');
  const two = await enrolledHost(relay, 'two');
  const third = testHost(relay, 'three');
  const refused = await third.api.enrol();
  assert.equal(refused.status, 503);
  assert.match(String(refused.body['error']), /capacity/);
  assert.equal((await one.api.enrol()).status, 200, 're-enrolling a live key needs no new place');
  const rotated = await fetch(`${relay.url}/v2/relay/rotate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ rotation: signedRotation('two', two.key, third.key, relay.clock.now) }),
  });
  assert.equal(rotated.status, 200, 'a rotation moves a place, it does not take one');
  assert.equal((await testHost(relay, 'four').api.enrol()).status, 503);
});
