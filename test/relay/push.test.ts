// Push over a real relay on 127.0.0.1 (design §3, protocol.md §3.3).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toBase64 } from '../../src/protocol/base64.ts';
import { sha256Hex } from '../../src/protocol/hash.ts';
import { verifyAccept } from '../../src/protocol/records/accept.ts';
import { enrolledHost, envelopeItem, pushOne, receiptItem, sealedEnvelope, startTestRelay, type TestHost } from '../helpers/relay-fixture.ts';

async function pulled(host: TestHost) {
  const answer = await host.api.pull(0);
  assert.equal(answer.status, 200);
  return answer.body as {
    head_seq: number;
    items: Array<{ seq: number; item_id: string; wire_b64: string; kind: string; sender_pubkey: string }>;
    last_seq: number;
    more: boolean;
  };
}

test('an accepted item carries a valid accept receipt; a retry is a duplicate with the original seq and at', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const env = sealedEnvelope(a, b, relay.clock.now);
  const item = envelopeItem(env.id, [{ host: b, wire: env.wire }]);

  const first = await pushOne(a, item);
  assert.equal(first.status, 'accepted');
  const accept = verifyAccept(first.accept, first.sig, relay.service.relayPubkey);
  assert.ok(accept, 'accept receipt verifies against the relay key');
  assert.equal(accept.item_id, env.id);
  assert.equal(accept.sender_pubkey, a.key.publicKey);
  assert.equal(accept.epoch, relay.service.epoch);
  assert.deepEqual(accept.targets, [{ host_pubkey: b.key.publicKey, seq: first.targets[0]?.seq, wire_hash: sha256Hex(env.wire) }]);
  assert.ok((first.targets[0]?.seq ?? 0) >= relay.clock.now, 'the seq floor is the clock in ms');

  relay.clock.advance(60_000);
  const again = await pushOne(a, item);
  assert.equal(again.status, 'duplicate');
  assert.deepEqual(again.targets, first.targets);
  assert.equal(verifyAccept(again.accept, again.sig, relay.service.relayPubkey)?.at, accept.at, 'a duplicate repeats the first at');
  assert.equal((await pulled(b)).items.length, 1);
});

test('the same item id with other bytes is a conflict and changes nothing', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const env = sealedEnvelope(a, b, relay.clock.now);
  assert.equal((await pushOne(a, envelopeItem(env.id, [{ host: b, wire: env.wire }]))).status, 'accepted');
  const other = JSON.stringify({ ...JSON.parse(env.wire), subject: 'changed' });
  const conflict = await pushOne(a, envelopeItem(env.id, [{ host: b, wire: other }]));
  assert.equal(conflict.status, 'rejected:conflict');
  assert.equal(conflict.accept, undefined);
  const queue = await pulled(b);
  assert.equal(queue.items.length, 1);
  assert.equal(Buffer.from(queue.items[0]?.wire_b64 ?? '', 'base64').toString(), env.wire);
});

test('a failing target rejects the whole item and stores nothing (partial fan-out, quota)', async () => {
  const relay = await startTestRelay({ limits: { max_queue_items: 1 } });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const c = await enrolledHost(relay, 'server');
  const stranger = { ...c, key: { ...c.key, publicKey: toBase64(Buffer.alloc(32, 7)) } } as TestHost;

  const env = sealedEnvelope(a, b, relay.clock.now);
  const partial = await pushOne(
    a,
    envelopeItem(env.id, [
      { host: b, wire: env.wire },
      { host: stranger, wire: env.wire },
    ]),
  );
  assert.equal(partial.status, 'rejected:target not enrolled');
  assert.equal((await pulled(b)).head_seq, 0, 'nothing was stored for the good target');

  const filler = sealedEnvelope(a, c, relay.clock.now);
  assert.equal((await pushOne(a, envelopeItem(filler.id, [{ host: c, wire: filler.wire }]))).status, 'accepted');
  const both = sealedEnvelope(a, b, relay.clock.now);
  const quota = await pushOne(
    a,
    envelopeItem(both.id, [
      { host: b, wire: both.wire },
      { host: c, wire: sealedEnvelope(a, c, relay.clock.now, 'hello', 'secret body', both.id).wire },
    ]),
  );
  assert.equal(quota.status, 'rejected:quota:queue_items');
  assert.equal((await pulled(b)).head_seq, 0, 'the quota failure on one target stored nothing on the other');
});

test('some targets already stored, others new: the new ones are stored and at is the earliest', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const c = await enrolledHost(relay, 'server');
  const env = sealedEnvelope(a, b, relay.clock.now);
  const forC = sealedEnvelope(a, c, relay.clock.now, 'hello', 'secret body', env.id).wire;
  const first = await pushOne(a, envelopeItem(env.id, [{ host: b, wire: env.wire }]));
  relay.clock.advance(5_000);
  const second = await pushOne(
    a,
    envelopeItem(env.id, [
      { host: b, wire: env.wire },
      { host: c, wire: forC },
    ]),
  );
  assert.equal(second.status, 'accepted');
  assert.equal(second.targets[0]?.seq, first.targets[0]?.seq);
  assert.equal(second.accept?.['at'], first.accept?.['at']);
  assert.equal((await pulled(c)).items.length, 1);
  assert.equal((await pulled(b)).items.length, 1);
});

test('several addresses on one host are one target; a repeated target is refused', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const env = sealedEnvelope(a, b, relay.clock.now);
  const twoAgents = JSON.stringify({ ...JSON.parse(env.wire), to: ['bob@desk', 'carol@desk'] });
  const repeated = await pushOne(
    a,
    envelopeItem(env.id, [
      { host: b, wire: env.wire },
      { host: b, wire: env.wire },
    ]),
  );
  assert.equal(repeated.status, 'rejected:duplicate target');
  assert.equal((await pulled(b)).head_seq, 0);
  // the relay does not verify envelope signatures; one target per host is the rule it enforces
  const one = await pushOne(a, envelopeItem(env.id, [{ host: b, wire: twoAgents }]));
  assert.equal(one.status, 'accepted');
  assert.equal(one.targets.length, 1);
});

test('wire bytes come back byte for byte, also when they are not canonical JSON', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const env = sealedEnvelope(a, b, relay.clock.now);
  const parsed = JSON.parse(env.wire) as Record<string, unknown>;
  // pretty-printed, keys in another order, an escaped character: not canonical, still the sender's bytes
  const odd = `{\n  "subject": "caf\\u00e9",\n${JSON.stringify({ ...parsed, subject: undefined }, null, 3).slice(1)}`;
  const result = await pushOne(a, envelopeItem(env.id, [{ host: b, wire: odd }]));
  assert.equal(result.status, 'accepted');
  assert.equal(result.accept?.['targets'] !== undefined && (result.accept['targets'] as Array<{ wire_hash: string }>)[0]?.wire_hash, sha256Hex(odd));
  const queue = await pulled(b);
  assert.equal(Buffer.from(queue.items[0]?.wire_b64 ?? '', 'base64').toString('utf8'), odd);
  assert.equal(queue.items[0]?.sender_pubkey, a.key.publicKey);
  assert.equal(queue.items[0]?.kind, 'envelope');
});

test('a receipt item signed by the pushing host is accepted and pulled by its target', async () => {
  const relay = await startTestRelay();
  const sender = await enrolledHost(relay, 'laptop');
  const recipient = await enrolledHost(relay, 'desk');
  const item = receiptItem(recipient, sender, '01JCZ5N0000000000000000000', 'delivered', 1, relay.clock.now);
  const result = await pushOne(recipient, item);
  assert.equal(result.status, 'accepted');
  const queue = await pulled(sender);
  assert.equal(queue.items[0]?.kind, 'receipt');
  assert.equal(queue.items[0]?.item_id, item.item_id);
});
