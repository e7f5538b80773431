// Every rejection string of protocol.md §3.3, and their order; the item checks and quotas through the
// core (relay-core-fixture.ts), the rest through a served relay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toBase64 } from '../../src/protocol/base64.ts';
import { signEnvelope, type EnvelopeV3, type UnsignedEnvelopeV3 } from '../../src/protocol/records/envelope.ts';
import { signSenderList } from '../../src/protocol/records/sender-list.ts';
import type { EnrolmentAuthority } from '../../src/relay/authority/enrolment-authority.ts';
import {
  enrolledHost,
  envelopeItem,
  hostKeys,
  pushEnvelope,
  pushOne,
  receiptItem,
  sealedEnvelope,
  startTestRelay,
  type HostKeys,
  type PushingHost,
} from '../helpers/relay-fixture.ts';
import { enrolledAtCore, startTestCore, type CoreHost } from '../helpers/relay-core-fixture.ts';
import { T0 } from '../helpers/clock.ts';

async function statusOf(host: PushingHost, item: unknown): Promise<string> {
  return (await pushOne(host, item)).status;
}

const b64 = (text: string): string => toBase64(Buffer.from(text));

test('each check of protocol §3.3 has its rejection string, checked in order', async () => {
  const relay = await startTestCore({ limits: { max_targets: 2, max_item_bytes: 4096 } });
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  const c = await enrolledAtCore(relay, 'server');
  const ghost = hostKeys('ghost');
  const env = sealedEnvelope(a, b, relay.clock.now);
  const target = (host: HostKeys, wire = env.wire) => ({ host_pubkey: host.key.publicKey, wire_b64: b64(wire) });
  const item = (fields: Record<string, unknown>) => ({ kind: 'envelope', item_id: env.id, targets: [target(b)], ...fields });

  assert.equal(await statusOf(a, item({ item_id: '' })), 'rejected:bad item id');
  assert.equal(await statusOf(a, item({ item_id: 'x'.repeat(301) })), 'rejected:bad item id');
  assert.equal(await statusOf(a, item({ kind: 'expired' })), 'rejected:bad kind');
  assert.equal(await statusOf(a, item({ kind: 'nope', targets: [] })), 'rejected:bad kind', 'kind is checked before targets');
  assert.equal(await statusOf(a, item({ targets: [] })), 'rejected:bad targets');
  assert.equal(await statusOf(a, item({ targets: [target(b), target(c), target(a)] })), 'rejected:bad targets');
  assert.equal(await statusOf(a, item({ targets: [{ host_pubkey: 5 }] })), 'rejected:bad targets');
  assert.equal(await statusOf(a, item({ targets: [target(ghost, 'not json')] })), 'rejected:target not enrolled', 'enrolment before wire');
  assert.equal(await statusOf(a, item({ targets: [target(b), target(b, 'not json')] })), 'rejected:duplicate target', 'duplicate before wire');
  assert.equal(await statusOf(a, item({ targets: [{ host_pubkey: b.key.publicKey, wire_b64: '***' }] })), 'rejected:bad wire');
  assert.equal(
    await statusOf(a, item({ targets: [{ host_pubkey: b.key.publicKey, wire_b64: 'aGVsbG8' }] })),
    'rejected:bad wire',
    'unpadded base64 is malformed',
  );
  assert.equal(await statusOf(a, item({ targets: [target(b, 'hello')] })), 'rejected:bad wire');
  const parsed = JSON.parse(env.wire) as EnvelopeV3;
  const big = JSON.stringify({ ...parsed, meta: { ...parsed.meta, pad: 'x'.repeat(5000) } });
  assert.equal(await statusOf(a, item({ targets: [target(b, big)] })), 'rejected:item over size limit');
  assert.match(await statusOf(a, item({ targets: [target(b, '{}')] })), /^rejected:bad envelope: .+/);
  assert.equal(await statusOf(a, item({ item_id: 'another-id' })), 'rejected:item id is not the envelope id');

  const plain: UnsignedEnvelopeV3 = { ...(JSON.parse(env.wire) as UnsignedEnvelopeV3 & { sig?: unknown }), body: 'plaintext', enc: null };
  delete (plain as { sig?: unknown }).sig;
  const unsealed = JSON.stringify(signEnvelope(plain, a.name, a.key));
  assert.equal(await statusOf(a, item({ targets: [target(b, unsealed)] })), 'rejected:envelope body is not sealed');

  const receipt = receiptItem(b, a, env.id, 'delivered', 1, relay.clock.now);
  assert.equal(await statusOf(b, { ...receipt, targets: [target(a, env.wire)] }), 'rejected:bad receipt');
  assert.equal(await statusOf(b, { ...receipt, item_id: 'receipt:other' }), 'rejected:item id is not the receipt id');
  assert.equal(await statusOf(c, receipt), 'rejected:receipt is not signed by the sending host');
});

test('an envelope whose meta lacks the four arrays is refused as upstream refuses it, and nothing is stored', async () => {
  const relay = await startTestCore();
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  const env = sealedEnvelope(a, b, relay.clock.now);
  const { sig: _sig, ...unsigned } = JSON.parse(env.wire) as EnvelopeV3;
  const emptyMeta = JSON.stringify(signEnvelope({ ...unsigned, meta: {} as EnvelopeV3['meta'] }, a.name, a.key));
  assert.equal(await statusOf(a, envelopeItem(env.id, [{ host: b, wire: emptyMeta }])), 'rejected:bad envelope: bad meta.mentions');
  assert.equal(await statusOf(a, envelopeItem(env.id, [{ host: b, wire: env.wire }])), 'accepted', 'the refusal left no dedup row');
});

test('a target that published a sender list refuses other senders, before later checks', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const c = await enrolledHost(relay, 'server');
  const list = {
    v: 1 as const,
    type: 'relay-senders' as const,
    host_pubkey: b.key.publicKey,
    senders: [c.key.publicKey],
    iat: new Date(relay.clock.now).toISOString(),
  };
  assert.equal((await b.api.call('POST', '/v2/relay/senders', { list, sig: signSenderList(list, b.key) })).status, 200);
  const env = sealedEnvelope(a, b, relay.clock.now);
  const wire = b64(env.wire);
  const twice = {
    kind: 'envelope',
    item_id: env.id,
    targets: [
      { host_pubkey: b.key.publicKey, wire_b64: wire },
      { host_pubkey: b.key.publicKey, wire_b64: wire },
    ],
  };
  assert.equal(await statusOf(a, twice), 'rejected:sender not accepted by target', 'sender list before duplicate target');
  assert.equal(await statusOf(a, envelopeItem(env.id, [{ host: b, wire: env.wire }])), 'rejected:sender not accepted by target');
  const fromC = sealedEnvelope(c, b, relay.clock.now);
  assert.equal(await statusOf(c, envelopeItem(fromC.id, [{ host: b, wire: fromC.wire }])), 'accepted');
});

test('pushes over the per-minute rate answer 200 with every item rejected:rate', async () => {
  const relay = await startTestRelay({ config: { pushes_per_minute: 1 } });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const one = sealedEnvelope(a, b, relay.clock.now);
  assert.equal(await statusOf(a, envelopeItem(one.id, [{ host: b, wire: one.wire }])), 'accepted');
  const two = sealedEnvelope(a, b, relay.clock.now);
  const answer = await a.api.push([envelopeItem(two.id, [{ host: b, wire: two.wire }]), { kind: 'bad' }]);
  assert.equal(answer.status, 200);
  assert.deepEqual(
    (answer.body['results'] as Array<{ status: string }>).map((r) => r.status),
    ['rejected:rate', 'rejected:rate'],
  );
  relay.clock.advance(60_000);
  assert.equal(await statusOf(a, envelopeItem(two.id, [{ host: b, wire: two.wire }])), 'accepted', 'a new minute, a new budget');
});

test('queue and sender quotas by items and bytes', async () => {
  const relay = await startTestCore({ limits: { max_queue_items: 3, max_sender_items: 2, max_queue_bytes: 1_000_000, max_sender_bytes: 1_000_000 } });
  const a = await enrolledAtCore(relay, 'laptop');
  const c = await enrolledAtCore(relay, 'server');
  const b = await enrolledAtCore(relay, 'desk');
  const push = async (from: CoreHost) => (await pushEnvelope(from, b, relay.clock.now)).status;
  assert.equal(await push(a), 'accepted');
  assert.equal(await push(a), 'accepted');
  assert.equal(await push(a), 'rejected:quota:sender_items', 'one sender cannot fill the queue');
  assert.equal(await push(c), 'accepted');
  assert.equal(await push(c), 'rejected:quota:queue_items');
  const acked = await b.api.ack((await b.api.pull(0)).body['head_seq'] as number, relay.context.epoch);
  assert.equal(acked.status, 200);
  assert.equal(await push(a), 'accepted', 'acked items no longer count');
});

test('byte quotas count raw wire bytes', async () => {
  const size = Buffer.byteLength(sealedEnvelope(hostKeys('laptop'), hostKeys('desk'), T0).wire);
  const relay = await startTestCore({ limits: { max_queue_bytes: 3 * size + 10, max_sender_bytes: 2 * size + 10 } });
  const a = await enrolledAtCore(relay, 'laptop');
  const c = await enrolledAtCore(relay, 'server');
  const b = await enrolledAtCore(relay, 'desk');
  const push = async (from: CoreHost) => (await pushEnvelope(from, b, relay.clock.now)).status;
  assert.equal(await push(a), 'accepted');
  assert.equal(await push(a), 'accepted');
  assert.equal(await push(a), 'rejected:quota:sender_bytes');
  assert.equal(await push(c), 'accepted');
  assert.equal(await push(c), 'rejected:quota:queue_bytes');
});

test('account quotas span the hosts of one proven account, never an owner_fp claim', async () => {
  const byName: EnrolmentAuthority = {
    name: 'test-accounts',
    strength: 1,
    authorize: async (request) => ({ ok: true, account: request.host_name.startsWith('acme-') ? 'acme' : null, org: null }),
  };
  const relay = await startTestCore({ authority: byName, limits: { max_owner_items: 2, max_owner_bytes: 1_000_000 } });
  const a = await enrolledAtCore(relay, 'laptop');
  const one = await enrolledAtCore(relay, 'acme-one');
  const two = await enrolledAtCore(relay, 'acme-two');
  const other = await enrolledAtCore(relay, 'desk');
  const push = async (to: CoreHost) => (await pushEnvelope(a, to, relay.clock.now)).status;
  assert.equal(await push(one), 'accepted');
  assert.equal(await push(two), 'accepted');
  assert.equal(await push(one), 'rejected:quota:account_items');
  assert.equal(await push(two), 'rejected:quota:account_items');
  assert.equal(await push(other), 'accepted', 'a host without an account is not charged');
  assert.equal(await push(other), 'accepted');
  assert.equal(await push(other), 'accepted');
});
