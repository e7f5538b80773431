// The LAN server's refusals: bad hops, body caps (413 while streaming), batch limits, unknown
// routes and methods, malformed requests, per-peer rate limits. Every answer is JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { signLanHop } from '../../src/protocol/lan-hop.ts';
import { generateSigningKey, verifySignature } from '../../src/protocol/keys.ts';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { HOST_FEATURES } from '../../src/host/transport/lan/features.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import { LAN_VERSION } from '../../src/host/transport/lan/server.ts';
import { LAN_MAX_BATCH, LAN_MAX_BODY_BYTES, PEER_CALLS_PER_MINUTE } from '../../src/host/transport/lan/limits.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test("signed routes need a fresh hop by a paired host's pinned key", async () => {
  const clock = new TestClock();
  const { b, aUrl } = await pairedHosts(clock);
  assert.equal((await lanCall(aUrl, 'GET', '/v1/enc-key', undefined, b)).status, 200);
  assert.deepEqual(await lanCall(aUrl, 'GET', '/v1/enc-key', undefined, null), {
    status: 401,
    body: { error: 'bad hop: not a paired host, a stale time or a bad signature' },
  });
  const forged = signLanHop('GET', '/v1/enc-key', '', 'beta', generateSigningKey(), clock.now);
  const res = await fetch(`${aUrl}/v1/enc-key`, { headers: { ...forged } });
  assert.equal(res.status, 401);
  const stale = signLanHop('GET', '/v1/enc-key', '', 'beta', b.keys.hostKey, clock.now - 5 * 60_000 - 1);
  assert.equal((await fetch(`${aUrl}/v1/enc-key`, { headers: { ...stale } })).status, 401);
  // The body is inside the signature: a changed body fails.
  const hop = signLanHop('POST', '/v2/envelopes', '{"envelopes":[]}', 'beta', b.keys.hostKey, clock.now);
  const changed = await fetch(`${aUrl}/v2/envelopes`, { method: 'POST', headers: { ...hop, 'content-type': 'application/json' }, body: '{"envelopes":[ ]}' });
  assert.equal(changed.status, 401);
});

test('bodies over the cap answer 413 JSON, decided while streaming', async () => {
  const clock = new TestClock();
  const { aUrl } = await pairedHosts(clock);
  const port = Number(new URL(aUrl).port);
  // No content-length: chunked, so the server must count while the body streams.
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v2/envelopes', headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res
        .setEncoding('utf8')
        .on('data', (c: string) => {
          body += c;
        })
        .on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent <= LAN_MAX_BODY_BYTES) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
  assert.equal(answer.status, 413);
  assert.deepEqual(JSON.parse(answer.body), { error: 'request body too large' });
  const declared = await fetch(`${aUrl}/v1/rotate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(70 * 1024) });
  assert.equal(declared.status, 413);
});

test('batches over the limit, unknown routes and wrong methods answer JSON errors', async () => {
  const clock = new TestClock();
  const { b, aUrl } = await pairedHosts(clock);
  const big = await lanCall(aUrl, 'POST', '/v2/envelopes', { envelopes: Array.from({ length: LAN_MAX_BATCH + 1 }, () => ({})) }, b);
  assert.equal(big.status, 400);
  assert.deepEqual(big.body, { error: `at most ${LAN_MAX_BATCH} envelopes per call` });
  const bad = await lanCall(aUrl, 'POST', '/v2/envelopes', { envelopes: [{}] }, b);
  assert.deepEqual(bad.body, { results: [{ id: null, result: 'rejected:bad envelope: not version 3', status: 'rejected:bad envelope: not version 3' }] });
  assert.deepEqual(await lanCall(aUrl, 'GET', '/nope', undefined, null), { status: 404, body: { error: 'no such endpoint' } });
  assert.deepEqual(await lanCall(aUrl, 'GET', '/v2/envelopes', undefined, null), { status: 405, body: { error: 'use POST on /v2/envelopes' } });
  const notJson = await fetch(`${aUrl}/v1/rotate`, { method: 'POST', body: 'nope' });
  assert.equal(notJson.status, 400);
  assert.deepEqual(await notJson.json(), { error: 'body is not JSON' });
});

test('owner policies are not kept here: GET /v1/policies and POST /v1/policy answer 404, also to a paired peer', async () => {
  const clock = new TestClock();
  const { b, aUrl } = await pairedHosts(clock);
  assert.equal((await lanCall(aUrl, 'GET', '/v1/policies', undefined, b)).status, 404);
  assert.equal((await lanCall(aUrl, 'POST', '/v1/policy', { policy: {} }, b)).status, 404);
});

test('GET /v1/status: the §5 fields and our features; with ?challenge= signed by the host key', async () => {
  const clock = new TestClock();
  const { a, aUrl } = await pairedHosts(clock);
  const plain = await lanCall(aUrl, 'GET', '/v1/status', undefined, null);
  assert.deepEqual(plain.body, {
    service: 'agentmbx',
    v: 1,
    host: 'alpha',
    host_pubkey: a.keys.hostKey.publicKey,
    version: LAN_VERSION,
    started_at: new Date(clock.now).toISOString(),
    features: [...HOST_FEATURES],
  });
  const signed = (await lanCall(aUrl, 'GET', '/v1/status?challenge=abc', undefined, null)).body as Record<string, unknown>;
  const { sig, ...rest } = signed;
  assert.deepEqual(rest, { ...(plain.body as object), type: 'status', challenge: 'abc' });
  assert.equal(verifySignature(a.keys.hostKey.publicKey, canonicalJson(rest), sig), true);
});

test('a malformed request line gets a JSON 400', async () => {
  const clock = new TestClock();
  const { aUrl } = await pairedHosts(clock);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(aUrl).port), '127.0.0.1', () => socket.write('NOT A REQUEST\r\n\r\n'));
    let out = '';
    socket
      .setEncoding('utf8')
      .on('data', (c: string) => {
        out += c;
      })
      .on('end', () => resolve(out))
      .on('error', reject);
  });
  assert.match(text, /^HTTP\/1\.1 400 /);
  assert.match(text, /\{"error":"malformed request"\}$/);
});

test('signed calls are rate-limited per peer', async () => {
  const clock = new TestClock();
  const { b, aUrl } = await pairedHosts(clock);
  for (let i = 0; i < PEER_CALLS_PER_MINUTE; i++) {
    const r = await lanCall(aUrl, 'GET', '/v1/enc-key', undefined, b);
    assert.equal(r.status, 200);
  }
  assert.equal((await lanCall(aUrl, 'GET', '/v1/enc-key', undefined, b)).status, 429);
  clock.now += 60_000;
  assert.equal((await lanCall(aUrl, 'GET', '/v1/enc-key', undefined, b)).status, 200);
});

test('hostile nesting is a rejection or a 4xx, never a crash', async () => {
  const clock = new TestClock();
  const { b, aUrl } = await pairedHosts(clock);
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  const raw = `{"envelopes":[{"v":3,"meta":${deep}}]}`;
  const hop = signLanHop('POST', '/v2/envelopes', raw, 'beta', b.keys.hostKey, clock.now);
  const res = await fetch(`${aUrl}/v2/envelopes`, { method: 'POST', headers: { ...hop, 'content-type': 'application/json' }, body: raw });
  assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `status ${res.status}`);
  if (res.status === 200) assert.match(JSON.stringify(await res.json()), /rejected:/);
  const rotate = await fetch(`${aUrl}/v1/rotate`, { method: 'POST', body: `{"records":[{"rec":${deep}}]}` });
  assert.ok(rotate.status === 200 || (rotate.status >= 400 && rotate.status < 500), `status ${rotate.status}`);
  assert.equal((await lanCall(aUrl, 'GET', '/v1/status', undefined, null)).status, 200, 'still serving');
});
