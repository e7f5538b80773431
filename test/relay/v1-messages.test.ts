// The v1 mail endpoints of 0.5.x hosts (protocol.md §3.10) on the durable store.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signRelayHop } from '../../src/protocol/relay-hop.ts';
import type { EnrolmentAuthority } from '../../src/relay/authority/enrolment-authority.ts';
import { enrolledHost, testHost, sealedEnvelope, startTestRelay, type TestHost, type TestRelay } from '../helpers/relay-fixture.ts';

/** A 0.5.x-style call: found by name (no x-mbx-key), v1 path signed without its query. */
async function v1Call(relay: TestRelay, host: TestHost, method: 'GET' | 'POST', path: string, body?: unknown) {
  const rawBody = body === undefined ? '' : JSON.stringify(body);
  const headers: Record<string, string> = { ...signRelayHop({ method, path, rawBody }, host.name, host.key, relay.clock.now) };
  delete headers['x-mbx-key'];
  if (rawBody !== '') headers['content-type'] = 'application/json';
  const response = await fetch(new URL(path, relay.url), { method, headers, ...(rawBody === '' ? {} : { body: rawBody }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test('a 0.5.x host pushes by host name, pulls with a cursor and acks', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const env = sealedEnvelope(a, b, relay.clock.now);
  const envelope = JSON.parse(env.wire) as Record<string, unknown>;

  assert.deepEqual((await v1Call(relay, a, 'POST', '/v1/relay/messages', { envelopes: [envelope] })).body, { stored: 1 });
  assert.deepEqual(
    (await v1Call(relay, a, 'POST', '/v1/relay/messages', { envelopes: [envelope] })).body,
    { stored: 1 },
    'a retry is a duplicate, stored once',
  );
  const pulled = await v1Call(relay, b, 'GET', '/v1/relay/messages?after=0');
  assert.equal(pulled.status, 200);
  const items = pulled.body['items'] as Array<{ seq: number; envelope: unknown; from: string }>;
  assert.equal(items.length, 1);
  assert.deepEqual(items[0]?.envelope, envelope);
  assert.equal(items[0]?.from, 'laptop');
  assert.equal(pulled.body['cursor'], items[0]?.seq);
  assert.equal(((await b.api.pull(0)).body['items'] as unknown[]).length, 1, 'v2 pulls see v1 pushes');

  assert.deepEqual(
    (await v1Call(relay, b, 'POST', '/v1/relay/ack', { cursor: Number.MAX_SAFE_INTEGER })).body,
    { ok: true },
    'the cursor is clamped to the head',
  );
  assert.equal(((await b.api.pull(0)).body['items'] as unknown[]).length, 0);
});

test('v1 routing refuses ambiguous names, unknown hosts and addresses without a host, storing nothing', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b1 = await enrolledHost(relay, 'desk');
  const b2 = await enrolledHost(relay, 'Desk');
  const env = JSON.parse(sealedEnvelope(a, b1, relay.clock.now).wire) as Record<string, unknown>;
  assert.deepEqual((await v1Call(relay, a, 'POST', '/v1/relay/messages', { envelopes: [env] })).body, { stored: 0, error: 'recipient host ambiguous' });
  const unknown = { ...env, to: ['bob@nowhere'] };
  assert.deepEqual((await v1Call(relay, a, 'POST', '/v1/relay/messages', { envelopes: [unknown] })).body, { stored: 0, error: 'recipient host not enrolled' });
  const broadcast = { ...env, to: ['*'] };
  assert.deepEqual((await v1Call(relay, a, 'POST', '/v1/relay/messages', { envelopes: [broadcast] })).body, {
    stored: 0,
    error: 'recipient has no host: relay mail needs name@host',
  });
  for (const host of [b1, b2]) assert.equal((await host.api.pull(0)).body['head_seq'], 0);
});

test("a crowded name is ambiguous for v1 even inside the caller's account, whatever the enrolment order", async () => {
  const byOwner: EnrolmentAuthority = {
    name: 'test-accounts',
    strength: 1,
    authorize: async (request) => ({ ok: true, account: request.owner_fp === 'acme' ? 'acme' : null, org: null }),
  };
  const relay = await startTestRelay({ authority: byOwner, config: { enrol_per_minute: 100 } });
  const caller = testHost(relay, 'laptop');
  assert.equal((await caller.api.enrol('acme')).status, 200);
  const ours = testHost(relay, 'desk');
  assert.equal((await ours.api.enrol('acme')).status, 200);
  for (let i = 0; i < 15; i += 1) await enrolledHost(relay, 'desk');
  const env = JSON.parse(sealedEnvelope(caller, ours, relay.clock.now).wire) as Record<string, unknown>;
  assert.deepEqual(
    (await v1Call(relay, caller, 'POST', '/v1/relay/messages', { envelopes: [env] })).body,
    { stored: 1 },
    '16 carriers: the one in our account',
  );
  await enrolledHost(relay, 'desk');
  const next = JSON.parse(sealedEnvelope(caller, ours, relay.clock.now).wire) as Record<string, unknown>;
  assert.deepEqual(
    (await v1Call(relay, caller, 'POST', '/v1/relay/messages', { envelopes: [next] })).body,
    { stored: 0, error: 'recipient host ambiguous' },
    '17 carriers: crowded',
  );
});
