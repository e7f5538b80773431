import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  HOP_MAX_SKEW_MS,
  relayHopString,
  relayHopTimeIsFresh,
  signRelayHop,
  signedHopPath,
  verifyRelayHopSignature,
  type RelayHopRequest,
} from '../../src/protocol/relay-hop.ts';
import { fixedKey, NOW_MS } from './fixtures.ts';

const key = fixedKey(1);
const request: RelayHopRequest = { method: 'post', path: '/v2/relay/items?x=1', rawBody: '{"items":[]}' };

describe('relay hop (protocol §2)', () => {
  it('signs the canonical {method, path, ts, body} with the query string and raw body inside', () => {
    const ts = String(NOW_MS);
    assert.equal(
      relayHopString('post', '/v2/relay/items?x=1', ts, 'B'),
      `{"body":"POST:/v2/relay/items?x=1:${ts}:B","method":"POST","path":"/v2/relay/items?x=1","ts":"${ts}"}`,
    );
  });

  it('round-trips: headers carry host, key, ms timestamp and a verifying signature', () => {
    const headers = signRelayHop(request, 'laptop', key, NOW_MS);
    assert.equal(headers['x-mbx-host'], 'laptop');
    assert.equal(headers['x-mbx-key'], key.publicKey);
    assert.equal(headers['x-mbx-ts'], String(NOW_MS));
    assert.equal(verifyRelayHopSignature(key.publicKey, request, headers['x-mbx-ts'], headers['x-mbx-sig']), true);
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...request, method: 'POST' }, headers['x-mbx-ts'], headers['x-mbx-sig']), true);
  });

  it('refuses a tampered method, path, query, ts, body, key or signature', () => {
    const h = signRelayHop(request, 'laptop', key, NOW_MS);
    const sig = h['x-mbx-sig'];
    const ts = h['x-mbx-ts'];
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...request, method: 'PUT' }, ts, sig), false);
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...request, path: '/v2/relay/ack?x=1' }, ts, sig), false);
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...request, path: '/v2/relay/items?x=2' }, ts, sig), false);
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...request, path: '/v2/relay/items' }, ts, sig), false);
    assert.equal(verifyRelayHopSignature(key.publicKey, request, String(NOW_MS + 1), sig), false);
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...request, rawBody: '{"items": []}' }, ts, sig), false);
    assert.equal(verifyRelayHopSignature(fixedKey(2).publicKey, request, ts, sig), false);
    assert.equal(verifyRelayHopSignature(key.publicKey, request, ts, `${sig.slice(0, -3)}AA=`), false);
    assert.equal(verifyRelayHopSignature(key.publicKey, request, ts, undefined), false);
  });

  it('signs v1 paths without their query string (G8, kept for compatibility)', () => {
    assert.equal(signedHopPath('/v1/relay/messages?after=5'), '/v1/relay/messages');
    assert.equal(signedHopPath('/v2/relay/items?after=5'), '/v2/relay/items?after=5');
    const v1: RelayHopRequest = { method: 'GET', path: '/v1/relay/messages?after=5', rawBody: '' };
    const h = signRelayHop(v1, 'laptop', key, NOW_MS);
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...v1, path: '/v1/relay/messages?after=0' }, h['x-mbx-ts'], h['x-mbx-sig']), true);
    assert.equal(verifyRelayHopSignature(key.publicKey, { ...v1, path: '/v1/relay/ack?after=5' }, h['x-mbx-ts'], h['x-mbx-sig']), false);
  });

  it('relayHopTimeIsFresh accepts ±5 minutes and refuses skew, NaN and non-numeric text', () => {
    assert.equal(relayHopTimeIsFresh(String(NOW_MS), NOW_MS), true);
    assert.equal(relayHopTimeIsFresh(String(NOW_MS - HOP_MAX_SKEW_MS), NOW_MS), true);
    assert.equal(relayHopTimeIsFresh(String(NOW_MS + HOP_MAX_SKEW_MS), NOW_MS), true);
    assert.equal(relayHopTimeIsFresh(String(NOW_MS - HOP_MAX_SKEW_MS - 1), NOW_MS), false);
    assert.equal(relayHopTimeIsFresh(String(NOW_MS + HOP_MAX_SKEW_MS + 1), NOW_MS), false);
    for (const ts of ['NaN', 'Infinity', '', '   ', 'abc', `${NOW_MS}x`, new Date(NOW_MS).toISOString(), undefined, NOW_MS]) {
      assert.equal(relayHopTimeIsFresh(ts, NOW_MS), false, String(ts));
    }
  });
});
