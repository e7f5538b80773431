// Host key rotation on the relay (protocol.md §3.7, §7.6; design §2 "Rotation").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateSigningKey, type SigningKey } from '../../src/protocol/keys.ts';
import { signRotation, type HostRotation } from '../../src/protocol/records/rotation.ts';
import { signSenderList } from '../../src/protocol/records/sender-list.ts';
import type { EnrolmentAuthority } from '../../src/relay/authority/enrolment-authority.ts';
import {
  enrolledHost,
  pushEnvelope,
  signedRotation,
  startTestRelay,
  testHost,
  type PushedEnvelope,
  type TestHost,
  type TestRelay,
} from '../helpers/relay-fixture.ts';

type Page = { items: Array<{ seq: number; item_id: string; sender_pubkey: string; wire_b64: string }>; head_seq: number };

function rotation(relay: TestRelay, host: string, oldKey: SigningKey, newKey: SigningKey): HostRotation {
  return signedRotation(host, oldKey, newKey, relay.clock.now);
}

async function rotate(relay: TestRelay, record: unknown) {
  const response = await fetch(`${relay.url}/v2/relay/rotate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ rotation: record }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function page(host: TestHost): Promise<Page> {
  const answer = await host.api.pull(0);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body as Page;
}

test('the queue moves to the new key in order, re-sequenced; dedup rows follow; the old key is revoked', async () => {
  const relay = await startTestRelay();
  const sender = await enrolledHost(relay, 'laptop');
  const old = await enrolledHost(relay, 'desk');
  const pushed = [];
  for (let i = 0; i < 3; i++) {
    pushed.push(await pushEnvelope(sender, old, relay.clock.now));
    relay.clock.advance(10);
  }
  const oldSeqs = pushed.map((p) => p.targets[0]?.seq ?? 0);
  relay.clock.advance(1_000);

  const newKey = generateSigningKey();
  const moved = await rotate(relay, rotation(relay, 'desk', old.key, newKey));
  assert.deepEqual([moved.status, moved.body], [200, { moved: 3 }]);

  const renewed = { ...testHost(relay, 'desk', newKey), enc: old.enc };
  const queue = await page(renewed);
  assert.deepEqual(
    queue.items.map((i) => i.item_id),
    pushed.map((p) => p.id),
    'same order',
  );
  const newSeqs = queue.items.map((i) => i.seq);
  assert.deepEqual(
    [...newSeqs].sort((x, y) => x - y),
    newSeqs,
    'ascending',
  );
  assert.ok((newSeqs[0] ?? 0) > Math.max(...oldSeqs), 're-sequenced above the old seqs');
  assert.ok(queue.items.every((i) => i.sender_pubkey === sender.key.publicKey));
  assert.equal(Buffer.from(queue.items[0]?.wire_b64 ?? '', 'base64').toString(), pushed[0]?.wire, 'wire bytes unchanged');
  assert.equal(((await renewed.api.info()).body['you'] as { host: string } | undefined)?.host, 'desk', 'the name moved');

  // a retry by the sender to the old key finds no target; to the new key it is a duplicate with the new seq
  const first = pushed[0] as PushedEnvelope;
  assert.equal((await pushEnvelope(sender, old, relay.clock.now, first)).status, 'rejected:target not enrolled');
  const retry = await pushEnvelope(sender, renewed, relay.clock.now, first);
  assert.equal(retry.status, 'duplicate');
  assert.deepEqual(retry.targets, [{ host_pubkey: newKey.publicKey, seq: newSeqs[0] }]);
  assert.equal((await page(renewed)).items.length, 3, 'nothing stored twice');

  // the old key is revoked: its hops fail and it cannot enrol again
  assert.equal((await old.api.pull(0)).status, 401);
  const reenrol = await old.api.enrol();
  assert.deepEqual([reenrol.status, reenrol.body['code']], [403, 'REVOKED']);
});

test("allowlists: the target's own list moves; other targets' lists have the old key swapped for the new", async () => {
  const relay = await startTestRelay();
  const friend = await enrolledHost(relay, 'laptop');
  const stranger = await enrolledHost(relay, 'server');
  const old = await enrolledHost(relay, 'desk');
  const peer = await enrolledHost(relay, 'phone');
  const iat = new Date(relay.clock.now).toISOString();
  const own = { v: 1 as const, type: 'relay-senders' as const, host_pubkey: old.key.publicKey, senders: [friend.key.publicKey], iat };
  assert.equal((await old.api.call('POST', '/v2/relay/senders', { list: own, sig: signSenderList(own, old.key) })).status, 200);
  const peers = { v: 1 as const, type: 'relay-senders' as const, host_pubkey: peer.key.publicKey, senders: [old.key.publicKey, friend.key.publicKey], iat };
  assert.equal((await peer.api.call('POST', '/v2/relay/senders', { list: peers, sig: signSenderList(peers, peer.key) })).status, 200);

  const newKey = generateSigningKey();
  assert.equal((await rotate(relay, rotation(relay, 'desk', old.key, newKey))).status, 200);
  const renewed = { ...testHost(relay, 'desk', newKey), enc: old.enc };

  assert.equal((await pushEnvelope(friend, renewed, relay.clock.now)).status, 'accepted', 'the moved list still names the friend');
  assert.equal((await pushEnvelope(stranger, renewed, relay.clock.now)).status, 'rejected:sender not accepted by target', 'the moved list still binds');
  assert.equal((await pushEnvelope(renewed, peer, relay.clock.now)).status, 'accepted', "the peer's list now names the new key");
  assert.equal((await pushEnvelope(friend, peer, relay.clock.now)).status, 'accepted', "the peer's other entries stay");

  // the moved list keeps its iat: an older list for the new key is still refused
  const stale = { ...own, host_pubkey: newKey.publicKey, senders: [], iat: new Date(relay.clock.now - 1_000).toISOString() };
  assert.equal((await renewed.api.call('POST', '/v2/relay/senders', { list: stale, sig: signSenderList(stale, newKey) })).status, 409);
});

test("the old queue is appended after the new key's existing items", async () => {
  const relay = await startTestRelay();
  const sender = await enrolledHost(relay, 'laptop');
  const old = await enrolledHost(relay, 'desk');
  const fresh = await enrolledHost(relay, 'desk');
  const early = await pushEnvelope(sender, old, relay.clock.now);
  relay.clock.advance(10);
  const onNew = await pushEnvelope(sender, fresh, relay.clock.now);
  relay.clock.advance(10);
  const late = await pushEnvelope(sender, old, relay.clock.now);

  const moved = await rotate(relay, rotation(relay, 'desk', old.key, fresh.key));
  assert.deepEqual(moved.body, { moved: 2 });
  const queue = await page(fresh);
  assert.deepEqual(
    queue.items.map((i) => i.item_id),
    [onNew.id, early.id, late.id],
  );
  assert.equal(queue.items[0]?.seq, onNew.targets[0]?.seq, "the new key's own item keeps its seq");
  assert.ok((queue.items[1]?.seq ?? 0) > (queue.items[0]?.seq ?? 0));
  assert.equal(queue.head_seq, queue.items[2]?.seq);
});

test('a retry of the same rotation → 200 {moved:0}', async () => {
  const relay = await startTestRelay();
  const sender = await enrolledHost(relay, 'laptop');
  const old = await enrolledHost(relay, 'desk');
  await pushEnvelope(sender, old, relay.clock.now);
  const newKey = generateSigningKey();
  const record = rotation(relay, 'desk', old.key, newKey);
  assert.deepEqual((await rotate(relay, record)).body, { moved: 1 });
  relay.clock.advance(60_000);
  assert.deepEqual(await rotate(relay, record), { status: 200, body: { moved: 0 } });
  assert.equal((await page(testHost(relay, 'desk', newKey))).items.length, 1);
});

test('refusals: 404 unknown old key, 409 revoked new key, 400 BAD_ROTATION', async () => {
  const relay = await startTestRelay();
  const unknown = await rotate(relay, rotation(relay, 'desk', generateSigningKey(), generateSigningKey()));
  assert.equal(unknown.status, 404);

  const old = await enrolledHost(relay, 'desk');
  const newKey = generateSigningKey();
  assert.equal((await rotate(relay, rotation(relay, 'desk', old.key, newKey))).status, 200);
  const other = await enrolledHost(relay, 'laptop');
  const back = await rotate(relay, rotation(relay, 'laptop', other.key, old.key));
  assert.equal(back.status, 409, 'a revoked key cannot come back as the new key');
  assert.equal((await other.api.pull(0)).status, 200, 'the refused rotation left the caller alone');

  const good = rotation(relay, 'laptop', other.key, generateSigningKey());
  const cases: Array<[string, unknown]> = [
    ['old signature by another key', { ...good, old_sig: rotation(relay, 'laptop', generateSigningKey(), generateSigningKey()).old_sig }],
    ['new signature swapped', { ...good, new_sig: good.old_sig }],
    ['record changed after signing', { ...good, rec: { ...good.rec, host: 'elsewhere' } }],
    ['same key twice', signRotation({ ...good.rec, new_pub: other.key.publicKey }, other.key, other.key)],
    ['missing', undefined],
    ['not an object', 'rotation'],
  ];
  for (const [name, record] of cases) {
    const answer = await rotate(relay, record);
    assert.equal(answer.status, 400, name);
    assert.equal(answer.body['code'], 'BAD_ROTATION', name);
    assert.match(answer.body['error'] as string, /^rotation refused: /, name);
  }
  assert.equal((await other.api.pull(0)).status, 200, 'no refused rotation revoked anything');
});

test('name and account move to a new key that enrolled on its own before the rotation arrived', async () => {
  const byOwner: EnrolmentAuthority = {
    name: 'test-accounts',
    strength: 1,
    authorize: async (request) => ({ ok: true, account: request.owner_fp === 'acme' ? 'acme' : null, org: null }),
  };
  const relay = await startTestRelay({ authority: byOwner, limits: { max_owner_items: 1 } });
  const sender = await enrolledHost(relay, 'laptop');
  const old = testHost(relay, 'desk');
  assert.equal((await old.api.enrol('acme')).status, 200);
  const fresh = testHost(relay, 'desk-new');
  assert.equal((await fresh.api.enrol()).status, 200, 'the new key enrolled first, without an account');

  assert.deepEqual((await rotate(relay, rotation(relay, 'desk', old.key, fresh.key))).body, { moved: 0 });
  const you = (await fresh.api.info()).body['you'] as { host: string };
  assert.equal(you.host, 'desk', 'the name moved');
  assert.equal((await pushEnvelope(sender, fresh, relay.clock.now)).status, 'accepted');
  assert.equal((await pushEnvelope(sender, fresh, relay.clock.now)).status, 'rejected:quota:account_items', 'the account moved: its quota applies');
});
