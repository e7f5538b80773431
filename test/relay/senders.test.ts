// Sender allowlists (protocol.md §3.6, §7.16; design §2): publish, then pushes from others are refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toBase64 } from '../../src/protocol/base64.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { MAX_SENDERS, signSenderList, type SenderListRecord } from '../../src/protocol/records/sender-list.ts';
import { SENDER_LIST_MAX_FUTURE_MS } from '../../src/relay/config.ts';
import { enrolledHost, pushEnvelope, startTestRelay, type TestHost } from '../helpers/relay-fixture.ts';

function list(host: TestHost, senders: string[], iatMs: number): SenderListRecord {
  return { v: 1, type: 'relay-senders', host_pubkey: host.key.publicKey, senders, iat: new Date(iatMs).toISOString() };
}

async function publish(host: TestHost, record: SenderListRecord, signer = host) {
  return host.api.call('POST', '/v2/relay/senders', { list: record, sig: signSenderList(record, signer.key) });
}

test('publishing a list → 200; from then on senders not on it are refused', async () => {
  const relay = await startTestRelay();
  const target = await enrolledHost(relay, 'desk');
  const friend = await enrolledHost(relay, 'laptop');
  const stranger = await enrolledHost(relay, 'server');
  assert.equal((await pushEnvelope(stranger, target, relay.clock.now)).status, 'accepted', 'no list: anyone enrolled may push');

  const answer = await publish(target, list(target, [friend.key.publicKey], relay.clock.now));
  assert.deepEqual([answer.status, answer.body], [200, { ok: true }]);
  assert.equal((await pushEnvelope(friend, target, relay.clock.now)).status, 'accepted');
  assert.equal((await pushEnvelope(stranger, target, relay.clock.now)).status, 'rejected:sender not accepted by target');
  assert.equal((await pushEnvelope(stranger, friend, relay.clock.now)).status, 'accepted', 'the list binds only its own target');

  // a newer list replaces it
  relay.clock.advance(1_000);
  assert.equal((await publish(target, list(target, [stranger.key.publicKey], relay.clock.now))).status, 200);
  assert.equal((await pushEnvelope(stranger, target, relay.clock.now)).status, 'accepted');
  assert.equal((await pushEnvelope(friend, target, relay.clock.now)).status, 'rejected:sender not accepted by target');
});

test('an older or equal iat → 409, and the stored list stays', async () => {
  const relay = await startTestRelay();
  const target = await enrolledHost(relay, 'desk');
  const friend = await enrolledHost(relay, 'laptop');
  const iat = relay.clock.now;
  assert.equal((await publish(target, list(target, [friend.key.publicKey], iat))).status, 200);
  for (const older of [iat, iat - 1]) {
    const answer = await publish(target, list(target, [], older));
    assert.equal(answer.status, 409, `iat ${older - iat}`);
  }
  assert.equal((await pushEnvelope(friend, target, relay.clock.now)).status, 'accepted');
});

test('an iat more than 5 minutes ahead → 400 "sender list iat is in the future"', async () => {
  const relay = await startTestRelay();
  const target = await enrolledHost(relay, 'desk');
  const ahead = await publish(target, list(target, [], relay.clock.now + SENDER_LIST_MAX_FUTURE_MS + 1));
  assert.deepEqual([ahead.status, ahead.body['error']], [400, 'sender list iat is in the future']);
  assert.equal((await publish(target, list(target, [], relay.clock.now + SENDER_LIST_MAX_FUTURE_MS))).status, 200, 'exactly 5 minutes is fine');
});

test("a bad signature → 401; another host's list → 403", async () => {
  const relay = await startTestRelay();
  const target = await enrolledHost(relay, 'desk');
  const other = await enrolledHost(relay, 'laptop');
  const forged = await publish(target, list(target, [], relay.clock.now), other);
  assert.equal(forged.status, 401);
  const theirs = await target.api.call('POST', '/v2/relay/senders', {
    list: list(other, [], relay.clock.now),
    sig: signSenderList(list(other, [], relay.clock.now), other.key),
  });
  assert.equal(theirs.status, 403);
  assert.equal((await pushEnvelope(target, other, relay.clock.now)).status, 'accepted', 'nothing was stored for the other host');
});

test('an invalid entry refuses the whole list (400); over 1,024 keys → 400', async () => {
  const relay = await startTestRelay();
  const target = await enrolledHost(relay, 'desk');
  const friend = await enrolledHost(relay, 'laptop');
  for (const bad of ['not-a-key', toBase64(Buffer.alloc(31, 1)), friend.key.publicKey.replace(/=$/, '')]) {
    const answer = await publish(target, list(target, [friend.key.publicKey, bad], relay.clock.now));
    assert.equal(answer.status, 400, bad);
  }
  const many = Array.from({ length: MAX_SENDERS + 1 }, () => generateSigningKey().publicKey);
  const tooMany = await publish(target, list(target, many, relay.clock.now));
  assert.equal(tooMany.status, 400);
  assert.match(tooMany.body['error'] as string, /too many senders/);
  assert.equal((await pushEnvelope(friend, target, relay.clock.now)).status, 'accepted', 'no refused list was stored');

  const full = await publish(target, list(target, many.slice(0, MAX_SENDERS), relay.clock.now));
  assert.equal(full.status, 200, 'exactly 1,024 keys is fine');
  assert.equal((await publish(target, { ...list(target, [], relay.clock.now), extra: 1 } as SenderListRecord)).status, 400, 'unknown fields are malformed');
  assert.equal((await target.api.call('POST', '/v2/relay/senders', {})).status, 400);
});
