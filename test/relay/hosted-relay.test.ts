// A hosted relay (enrolment_authority "account-token", design §8) on 127.0.0.1 with a local token
// issuer: enrolment, sessions on every hop, the issuer going down, the deny-list, account quotas
// and names (docs/hosted-relay.md).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { fingerprint } from '../../src/protocol/fingerprint.ts';
import { generateSigningKey, type SigningKey } from '../../src/protocol/keys.ts';
import { signRelayHop } from '../../src/protocol/relay-hop.ts';
import { JWKS_STALE_LIMIT_MS } from '../../src/relay/authority/jwks-cache.ts';
import { MAX_DENY_ENTRIES_PER_REQUEST, MAX_DENY_MS } from '../../src/relay/core/hosted.ts';
import type { RelayLimits } from '../../src/relay/config.ts';
import { backupRelayStore } from '../../src/relay/ops/backup.ts';
import { restoreRelayStore } from '../../src/relay/ops/restore.ts';
import { tempDir } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';
import { SQLITE_STORE_ONLY, pushEnvelope, startTestRelay, testHost, type TestHost, type TestRelay } from '../helpers/relay-fixture.ts';
import { RelayApi } from '../../src/host/relay-client/api.ts';
import { TestClock } from '../helpers/clock.ts';
import { accountTokenProof, cloudIdentity, ISSUER, startTokenIssuer, type CloudIdentity, type MintOptions, type TokenIssuer } from '../helpers/token-issuer.ts';

const AUDIENCE = 'https://relay.test.example';
const MINUTE = 60_000;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

interface HostedHost extends TestHost {
  id: CloudIdentity;
  token: string;
}

interface Hosted {
  relay: TestRelay;
  issuer: TokenIssuer;
  clock: TestClock;
}

async function startHosted(options: { dir?: string; clock?: TestClock; issuer?: TokenIssuer; limits?: Partial<RelayLimits> } = {}): Promise<Hosted> {
  const clock = options.clock ?? new TestClock();
  const issuer = options.issuer ?? (await startTokenIssuer(clock.nowMs));
  const relay = await startTestRelay({
    clock,
    ...(options.dir ? { dir: options.dir } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    config: { account_token: { token_issuer: ISSUER, token_jwks_url: issuer.jwksUrl, token_audience: AUDIENCE } },
  });
  return { relay, issuer, clock };
}

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(new URL(path, url), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** challenge, then enrol with the account-token proof of design §8 */
async function enrolWithToken(relayUrl: string, name: string, key: SigningKey, id: CloudIdentity, token: string): Promise<Answer> {
  const challenged = await post(relayUrl, '/v1/relay/challenge', { host: name, pubkey: key.publicKey });
  assert.equal(challenged.status, 200);
  const challenge = challenged.body['challenge'] as string;
  const sig = key.sign(canonicalJson({ v: 1, challenge, host: name, pubkey: key.publicKey, owner_fp: '' }));
  return post(relayUrl, '/v1/relay/enrol', {
    host: name,
    pubkey: key.publicKey,
    owner_fp: '',
    sig,
    proof: accountTokenProof(key, id.cloudKey, id.jkt, token, challenge),
  });
}

/** An enrolled host whose relay client sends its current `token` with every signed call. */
async function hostedHost(h: Hosted, name: string, account: string, mint: MintOptions = {}): Promise<HostedHost> {
  const host = testHost({ url: h.relay.url, clock: h.clock }, name);
  const id = await cloudIdentity(account, `${account}-${name}`);
  const token = await h.issuer.mint(AUDIENCE, id.claims, mint);
  const answer = await enrolWithToken(h.relay.url, name, host.key, id, token);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const hosted: HostedHost = { ...host, id, token };
  hosted.api = new RelayApi({ baseUrl: h.relay.url, hostName: name, key: host.key, nowMs: h.clock.nowMs, bearer: async () => hosted.token });
  return hosted;
}

/** A signed hop carrying `authorization: Bearer <token>` (none when token is null). */
async function hop(h: Hosted, host: HostedHost, method: 'GET' | 'POST', path: string, body?: unknown, token: string | null = host.token): Promise<Answer> {
  const rawBody = body === undefined ? '' : JSON.stringify(body);
  const headers: Record<string, string> = { ...signRelayHop({ method, path, rawBody }, host.name, host.key, h.clock.now) };
  if (rawBody !== '') headers['content-type'] = 'application/json';
  if (token !== null) headers['authorization'] = `Bearer ${token}`;
  const response = await fetch(new URL(path, h.relay.url), { method, headers, ...(rawBody === '' ? {} : { body: rawBody }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const pull = (h: Hosted, host: HostedHost) => hop(h, host, 'GET', '/v2/relay/items?after=0');

test('a host enrols with its account token; the account is recorded; every hop needs its token', async () => {
  const h = await startHosted();
  const a = await hostedHost(h, 'macbook', 'acct-1');
  const b = await hostedHost(h, 'desk', 'acct-1');
  const stored = await h.relay.service.core.context.store.read((tx) => tx.enrolments.get(a.key.publicKey));
  assert.equal(stored?.account, 'acct-1');
  assert.equal(stored?.authorizedBy, 'account-token');

  assert.equal((await pushEnvelope(a, b, h.clock.now)).status, 'accepted');
  assert.equal((await pull(h, b)).status, 200);
  const bare = await hop(h, a, 'GET', '/v2/relay/items?after=0', undefined, null);
  assert.deepEqual([bare.status, bare.body['code']], [401, 'TOKEN_REQUIRED']);
  const borrowed = await hop(h, a, 'GET', '/v2/relay/items?after=0', undefined, b.token);
  assert.deepEqual([borrowed.status, borrowed.body['code']], [401, 'TOKEN_INVALID'], "b's token is not bound to a's cloud key");
  assert.equal((await pull(h, b)).status, 200, 'b still works with its own token');
  const fresh = await h.issuer.mint(AUDIENCE, a.id.claims);
  assert.equal((await hop(h, a, 'GET', '/v2/relay/items?after=0', undefined, fresh)).status, 200, 'a refreshed token works at once');
  const info = await hop(h, a, 'GET', '/v2/relay/info', undefined, null);
  assert.equal(info.status, 200);
  assert.equal(info.body['you'], undefined, 'without a token the info route answers without `you`');
  assert.ok((await hop(h, a, 'GET', '/v2/relay/info')).body['you']);
});

test('an issuer signing with RS256 and ES256 keys beside its EdDSA one: hosts enrol and hop with tokens of each', async () => {
  const clock = new TestClock();
  const issuer = await startTokenIssuer(clock.nowMs);
  await issuer.addKey('rs', 'RS256', { publishAlg: false });
  await issuer.addKey('es', 'ES256');
  const h = await startHosted({ clock, issuer });
  const ed = await hostedHost(h, 'macbook', 'acct-1', { kid: 'k1' });
  const rs = await hostedHost(h, 'desk', 'acct-1', { kid: 'rs' });
  const es = await hostedHost(h, 'tablet', 'acct-2', { kid: 'es' });
  assert.deepEqual(
    [ed, rs, es].map((host) => JSON.parse(Buffer.from(host.token.split('.')[0] ?? '', 'base64url').toString()).alg),
    ['EdDSA', 'RS256', 'ES256'],
  );
  assert.equal((await pushEnvelope(ed, rs, h.clock.now)).status, 'accepted');
  assert.equal((await pushEnvelope(rs, es, h.clock.now)).status, 'accepted');
  assert.equal((await pushEnvelope(es, ed, h.clock.now)).status, 'accepted');
  for (const host of [ed, rs, es]) {
    const pulled = await pull(h, host);
    assert.equal(pulled.status, 200, host.name);
    assert.equal((pulled.body['items'] as unknown[]).length, 1, host.name);
  }
  const stored = await h.relay.service.core.context.store.read((tx) => tx.enrolments.get(es.key.publicKey));
  assert.equal(stored?.account, 'acct-2');
  const mismatched = await hop(h, rs, 'GET', '/v2/relay/items?after=0', undefined, await h.issuer.mint(AUDIENCE, rs.id.claims, { kid: 'rs', alg: 'PS256' }));
  assert.deepEqual([mismatched.status, mismatched.body['code']], [401, 'TOKEN_INVALID'], 'the RS256 key signing PS256');
  const id = await cloudIdentity('acct-1', 'forger');
  const forged = await enrolWithToken(
    h.relay.url,
    'forger',
    generateSigningKey(),
    id,
    await h.issuer.mint(AUDIENCE, id.claims, { kid: 'es', headerKid: 'k1' }),
  );
  assert.deepEqual([forged.status, forged.body['code']], [403, 'DENIED']);
  assert.match(forged.body['error'] as string, /alg is not the one its signing key \(kid\) allows \(EdDSA\)/);
});

test('refused enrolments answer 403 DENIED with the reason; a host-key-only enrol is refused', async () => {
  const h = await startHosted();
  const key = generateSigningKey();
  const id = await cloudIdentity('acct-1');
  const wrongAud = await enrolWithToken(h.relay.url, 'macbook', key, id, await h.issuer.mint('https://api.test.example', id.claims));
  assert.equal(wrongAud.status, 403);
  assert.equal(wrongAud.body['code'], 'DENIED');
  assert.match(wrongAud.body['error'] as string, /not for this relay/);
  const plain = await testHost({ url: h.relay.url, clock: h.clock }, 'laptop').api.enrol();
  assert.deepEqual([plain.status, plain.body['code']], [403, 'DENIED']);
});

test('a cloud key bound to one live enrolment cannot be certified by another host key', async () => {
  const h = await startHosted();
  const a = await hostedHost(h, 'macbook', 'acct-1');
  const second = generateSigningKey();
  // even holding the cloud key's private half, a second host key cannot take it over
  const answer = await enrolWithToken(h.relay.url, 'macbook-2', second, a.id, await h.issuer.mint(AUDIENCE, a.id.claims));
  assert.equal(answer.status, 403);
  assert.match(answer.body['error'] as string, /certified by another live host key/);
  assert.equal((await pull(h, a)).status, 200, 'the first host keeps working');
});

test('issuer down: keys serve an hour, then new enrolments fail closed while enrolled hosts work until their tokens expire', async () => {
  const h = await startHosted();
  const a = await hostedHost(h, 'macbook', 'acct-1');
  const b = await hostedHost(h, 'desk', 'acct-1');
  h.issuer.down = true;
  h.clock.advance(50 * MINUTE);
  // both hosts refresh their tokens (the accounts service still mints) and use them inside the hour
  a.token = await h.issuer.mint(AUDIENCE, a.id.claims, { lifetimeS: 900 });
  b.token = await h.issuer.mint(AUDIENCE, b.id.claims, { lifetimeS: 900 });
  assert.equal((await pushEnvelope(a, b, h.clock.now)).status, 'accepted');
  assert.equal((await pull(h, b)).status, 200);

  h.clock.advance(JWKS_STALE_LIMIT_MS - 50 * MINUTE + 1);
  const late = generateSigningKey();
  const lateId = await cloudIdentity('acct-1', 'late');
  const refused = await enrolWithToken(h.relay.url, 'late', late, lateId, await h.issuer.mint(AUDIENCE, lateId.claims));
  assert.equal(refused.status, 503);
  assert.equal(refused.body['code'], 'AUTHORITY_UNAVAILABLE');
  assert.match(refused.body['error'] as string, /could not be fetched for over an hour/);

  assert.equal((await pushEnvelope(a, b, h.clock.now)).status, 'accepted', 'enrolled hosts keep pushing on their current tokens');
  const pulled = await pull(h, b);
  assert.equal(pulled.status, 200);
  assert.equal((pulled.body['items'] as unknown[]).length, 2);
  const unverifiable = await hop(h, a, 'GET', '/v2/relay/items?after=0', undefined, await h.issuer.mint(AUDIENCE, a.id.claims));
  assert.deepEqual([unverifiable.status, unverifiable.body['code']], [503, 'AUTHORITY_UNAVAILABLE'], 'a new token cannot be checked now');

  h.clock.advance(15 * MINUTE);
  const expired = await pull(h, b);
  assert.deepEqual([expired.status, expired.body['code']], [401, 'TOKEN_INVALID'], 'past its exp the session ends');
});

async function adminToken(h: Hosted, scope = 'relay:deny', audience = AUDIENCE): Promise<string> {
  return h.issuer.mint(audience, { sub: 'ops', scope });
}

function denyBody(entries: Array<Record<string, unknown>>, h: Hosted): { entries: Array<Record<string, unknown>> } {
  const until = new Date(h.clock.now + 24 * 60 * MINUTE).toISOString();
  return { entries: entries.map((e) => ({ reason: 'cloud credential revoked', until, ...e })) };
}

test('a deny-list entry cuts an enrolled host at once, survives a restart and blocks re-enrolment', async () => {
  const h = await startHosted();
  const a = await hostedHost(h, 'macbook', 'acct-1');
  const b = await hostedHost(h, 'desk', 'acct-1');
  assert.equal((await pull(h, a)).status, 200, 'a has a cached session');

  const auth = { authorization: `Bearer ${await adminToken(h)}` };
  const added = await post(h.relay.url, '/v2/relay/admin/deny', denyBody([{ host_fp: fingerprint(a.key.publicKey) }], h), auth);
  assert.equal(added.status, 200, JSON.stringify(added.body));
  assert.deepEqual(added.body, { ok: true, entries: 1, sessions_dropped: 1 });

  const cut = await pull(h, a);
  assert.deepEqual([cut.status, cut.body['code']], [403, 'DENIED']);
  assert.match(cut.body['error'] as string, /cloud credential revoked/);
  assert.equal((await pull(h, b)).status, 200, 'other hosts are untouched');
  assert.equal((await pushEnvelope(b, a, h.clock.now)).status, 'accepted', 'mail to a still queues (its account may be restored)');

  await h.relay.stop();
  const again = await startHosted({ dir: h.relay.dir, clock: h.clock, issuer: h.issuer });
  assert.equal((await pull(again, a)).status, 403, 'the entry is durable');
  assert.equal((await pull(again, b)).status, 200);
  const reenrol = await enrolWithToken(again.relay.url, 'macbook', a.key, a.id, await again.issuer.mint(AUDIENCE, a.id.claims));
  assert.deepEqual([reenrol.status, reenrol.body['code']], [403, 'DENIED']);

  const byClient = await post(again.relay.url, '/v2/relay/admin/deny', denyBody([{ client_id: b.id.claims['client_id'] }], again), auth);
  assert.equal(byClient.status, 200);
  assert.equal((await pull(again, b)).status, 403, 'an entry by client_id cuts the hosts whose tokens carry it');

  again.clock.advance(24 * 60 * MINUTE + 1);
  a.token = await again.issuer.mint(AUDIENCE, a.id.claims);
  assert.equal((await pull(again, a)).status, 200, 'an entry stops applying at its until');
});

test('a restore from a backup taken before a deny-list entry carries the entry forward', SQLITE_STORE_ONLY, async () => {
  const h = await startHosted();
  const a = await hostedHost(h, 'macbook', 'acct-1');
  const file = `${tempDir('agentmbx-backup-')}/relay-backup.db`;
  await backupRelayStore({ storeDir: h.relay.dir, file, nowMs: h.clock.nowMs });
  const auth = { authorization: `Bearer ${await adminToken(h)}` };
  assert.equal((await post(h.relay.url, '/v2/relay/admin/deny', denyBody([{ host_fp: fingerprint(a.key.publicKey) }], h), auth)).status, 200);
  await h.relay.stop();
  await restoreRelayStore({ storeDir: h.relay.dir, file, env: {}, nowMs: h.clock.nowMs });
  const restored = await startHosted({ dir: h.relay.dir, clock: h.clock, issuer: h.issuer });
  const cut = await pull(restored, a);
  assert.deepEqual([cut.status, cut.body['code']], [403, 'DENIED'], 'the backup did not hold the entry; the live store did');
});

test('the deny route wants an operator token with relay:deny for this relay, and well-formed entries', async () => {
  const h = await startHosted();
  const a = await hostedHost(h, 'macbook', 'acct-1');
  const body = denyBody([{ host_fp: fingerprint(a.key.publicKey) }], h);
  const refused = async (headers: Record<string, string>, payload: unknown = body) => post(h.relay.url, '/v2/relay/admin/deny', payload, headers);
  assert.deepEqual((await refused({})).body['code'], 'TOKEN_REQUIRED');
  assert.equal((await refused({ authorization: `Bearer ${await adminToken(h, 'relay:read')}` })).status, 401);
  assert.equal((await refused({ authorization: `Bearer ${await adminToken(h, 'relay:deny', 'https://api.test.example')}` })).status, 401);
  assert.equal((await refused({ authorization: `Bearer ${a.token}` })).status, 401, "a host's access token has no scope");
  const auth = { authorization: `Bearer ${await adminToken(h, 'openid relay:deny')}` };
  const soon = new Date(h.clock.now + 10 * MINUTE).toISOString();
  assert.match(
    (await refused(auth, { entries: [{ host_fp: fingerprint(a.key.publicKey), reason: 'x', until: soon }] })).body['error'] as string,
    /at least 15 minutes/,
  );
  assert.equal((await refused(auth, { entries: [{ reason: 'x', until: soon }] })).status, 400);
  assert.equal((await refused(auth, denyBody([{ host_fp: 'zz' }], h))).status, 400);
  assert.equal((await refused(auth, { entries: [] })).status, 400);
  const many = denyBody(
    Array.from({ length: MAX_DENY_ENTRIES_PER_REQUEST + 1 }, (_, i) => ({ client_id: `c${i}` })),
    h,
  );
  assert.match((await refused(auth, many)).body['error'] as string, /at most 1000 entries/);
  const forever = new Date(h.clock.now + MAX_DENY_MS + MINUTE).toISOString();
  assert.match((await refused(auth, { entries: [{ client_id: 'c', reason: 'x', until: forever }] })).body['error'] as string, /ten years/);
  assert.equal((await pull(h, a)).status, 200, 'nothing was denied by the refused requests');
  assert.equal((await refused(auth)).status, 200);
});

test('the deny route does not exist on a host-key relay', async () => {
  const relay = await startTestRelay();
  assert.equal((await post(relay.url, '/v2/relay/admin/deny', { entries: [] })).status, 404);
});

test('quotas charge the account across its hosts; two accounts may each have a macbook', async () => {
  const h = await startHosted({ limits: { max_owner_items: 2 } });
  const sender = await hostedHost(h, 'macbook', 'acct-2');
  const a1 = await hostedHost(h, 'macbook', 'acct-1');
  const a2 = await hostedHost(h, 'desk', 'acct-1');
  assert.equal((await pushEnvelope(sender, a1, h.clock.now)).status, 'accepted');
  assert.equal((await pushEnvelope(sender, a2, h.clock.now)).status, 'accepted');
  assert.equal((await pushEnvelope(sender, a1, h.clock.now)).status, 'rejected:quota:account_items', 'the third item for acct-1 across its two hosts');
  assert.equal((await pushEnvelope(a1, sender, h.clock.now)).status, 'accepted', "acct-2's quota is its own");

  const twin = generateSigningKey();
  const twinId = await cloudIdentity('acct-1', 'twin');
  const taken = await enrolWithToken(h.relay.url, 'MacBook', twin, twinId, await h.issuer.mint(AUDIENCE, twinId.claims));
  assert.deepEqual([taken.status, taken.body['code']], [409, 'NAME_TAKEN'], 'one macbook per account');
});

test('`relay serve --config` with enrolment_authority "account-token" runs the hosted relay', async () => {
  const issuer = await startTokenIssuer(Date.now);
  const dir = tempDir('agentmbx-hosted-');
  const config = join(dir, 'relay.json');
  writeFileSync(
    config,
    JSON.stringify({ enrolment_authority: 'account-token', token_issuer: ISSUER, token_jwks_url: issuer.jwksUrl, token_audience: AUDIENCE }),
  );
  const relay = await spawnRelay(join(dir, 'store'), { args: ['--config', config] });
  const id = await cloudIdentity('acct-1');
  const key = generateSigningKey();
  const granted = await enrolWithToken(relay.url, 'macbook', key, id, await issuer.mint(AUDIENCE, id.claims));
  assert.equal(granted.status, 200, JSON.stringify(granted.body));
  const plain = await testHost({ url: relay.url, clock: relay.clock }, 'laptop').api.enrol();
  assert.deepEqual([plain.status, plain.body['code']], [403, 'DENIED']);
  assert.equal((await post(relay.url, '/v2/relay/admin/deny', { entries: [] })).body['code'], 'TOKEN_REQUIRED');
  relay.child.kill('SIGTERM');
  await relay.child.exited;
});
