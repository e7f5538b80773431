// GET /v2/relay/info (protocol.md §3.1, §6, §7.1): identity, epoch, limits, and `you` for a valid hop.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RELAY_VERSION } from '../../src/relay/relay-service.ts';
import { enrolledHost, envelopeItem, testHost, sealedEnvelope, signedEncAd, startTestRelay } from '../helpers/relay-fixture.ts';

const MiB = 1024 * 1024;

test('without a hop: v, relay key, epoch, version and exactly the §6 limits', async () => {
  const relay = await startTestRelay();
  const answer = await fetch(`${relay.url}/v2/relay/info`);
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get('content-type') ?? '', /application\/json/);
  const body = (await answer.json()) as { limits: Record<string, number> };
  assert.deepEqual(
    Object.keys(body.limits).slice(-4),
    ['max_owner_items', 'max_owner_bytes', 'max_account_items', 'max_account_bytes'],
    'the §3.1 names, then the older ones',
  );
  assert.deepEqual(body, {
    v: 2,
    relay_pubkey: relay.service.relayPubkey,
    epoch: relay.service.epoch,
    version: RELAY_VERSION,
    limits: {
      max_item_bytes: 524_288,
      max_batch: 200,
      max_pull: 500,
      max_pull_bytes: 8 * MiB,
      max_wait_s: 55,
      max_targets: 64,
      retention_days: 14,
      max_queue_items: 10_000,
      max_queue_bytes: 50 * MiB,
      max_sender_items: 2_000,
      max_sender_bytes: 20 * MiB,
      max_owner_items: 10_000,
      max_owner_bytes: 50 * MiB,
      max_account_items: 10_000,
      max_account_bytes: 50 * MiB,
    },
  });
});

test('a configured per-account quota is advertised under both names', async () => {
  const relay = await startTestRelay({ limits: { max_owner_items: 7, max_owner_bytes: 8000 } });
  const { limits } = (await (await fetch(`${relay.url}/v2/relay/info`)).json()) as { limits: Record<string, number> };
  assert.deepEqual([limits['max_owner_items'], limits['max_owner_bytes'], limits['max_account_items'], limits['max_account_bytes']], [7, 8000, 7, 8000]);
});

test('with a valid hop: you = host, pubkey, head_seq, acked_through, enc_ad', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');

  const empty = (await b.api.info()).body;
  assert.deepEqual(empty['you'], { host: 'desk', pubkey: b.key.publicKey, head_seq: 0, acked_through: 0, enc_ad: null });

  const env = sealedEnvelope(a, b, relay.clock.now);
  const pushed = (await a.api.push([envelopeItem(env.id, [{ host: b, wire: env.wire }])])).body['results'] as Array<{ targets: Array<{ seq: number }> }>;
  const seq = pushed[0]?.targets[0]?.seq ?? -1;
  const published = signedEncAd(b, relay.clock.now);
  assert.equal((await b.api.call('POST', '/v2/relay/enc-key', published)).status, 200);
  assert.equal((await b.api.ack(seq, relay.service.epoch)).status, 200);

  const you = (await b.api.info()).body['you'];
  assert.deepEqual(you, {
    host: 'desk',
    pubkey: b.key.publicKey,
    head_seq: seq,
    acked_through: seq,
    enc_ad: { enc_pub: b.enc.publicKey, exp: published.ad.exp },
  });
});

test('an invalid hop still answers 200, without you', async () => {
  const relay = await startTestRelay();
  const enrolled = await enrolledHost(relay, 'laptop');
  const stranger = testHost(relay, 'laptop');
  const unknown = await stranger.api.info();
  assert.equal(unknown.status, 200);
  assert.equal(unknown.body['you'], undefined);
  assert.equal(unknown.body['relay_pubkey'], relay.service.relayPubkey);

  relay.clock.advance(6 * 60_000);
  const skewed = await testHost({ url: relay.url, clock: { nowMs: () => relay.clock.now - 6 * 60_000 } }, 'laptop', enrolled.key).api.info();
  assert.equal(skewed.status, 200);
  assert.equal(skewed.body['you'], undefined, 'a stale hop gets no you');
});
