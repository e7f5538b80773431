import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { lanHopString, lanHopTimeIsFresh, signLanHop, verifyLanHopSignature } from '../../src/protocol/lan-hop.ts';
import { HOP_MAX_SKEW_MS } from '../../src/protocol/relay-hop.ts';
import { fixedKey, iso, NOW_MS } from './fixtures.ts';

const key = fixedKey(3);
const body = '{"envelopes":[]}';

describe('LAN hop (protocol §5)', () => {
  it('signs four lines: METHOD, pathname without query, ISO ts, hex SHA-256 of the body', () => {
    const ts = iso(NOW_MS);
    const hash = createHash('sha256').update(body).digest('hex');
    assert.equal(lanHopString('post', '/v2/envelopes?x=1', ts, body), `POST\n/v2/envelopes\n${ts}\n${hash}`);
    assert.equal(lanHopString('GET', '/v1/enc-key', ts, '').split('\n')[3], createHash('sha256').update('').digest('hex'));
  });

  it('round-trips, the query string being outside the signature', () => {
    const h = signLanHop('POST', '/v2/envelopes', body, 'desk', key, NOW_MS);
    assert.equal(h['x-mbx-host'], 'desk');
    assert.equal(h['x-mbx-ts'], iso(NOW_MS));
    assert.equal(verifyLanHopSignature(key.publicKey, 'POST', '/v2/envelopes', h['x-mbx-ts'], body, h['x-mbx-sig']), true);
    assert.equal(verifyLanHopSignature(key.publicKey, 'POST', '/v2/envelopes?any=thing', h['x-mbx-ts'], body, h['x-mbx-sig']), true);
  });

  it('refuses a tampered method, path, ts, body, key or signature', () => {
    const h = signLanHop('POST', '/v2/envelopes', body, 'desk', key, NOW_MS);
    const ts = h['x-mbx-ts'];
    const sig = h['x-mbx-sig'];
    assert.equal(verifyLanHopSignature(key.publicKey, 'PUT', '/v2/envelopes', ts, body, sig), false);
    assert.equal(verifyLanHopSignature(key.publicKey, 'POST', '/v1/receipts', ts, body, sig), false);
    assert.equal(verifyLanHopSignature(key.publicKey, 'POST', '/v2/envelopes', iso(NOW_MS + 1), body, sig), false);
    assert.equal(verifyLanHopSignature(key.publicKey, 'POST', '/v2/envelopes', ts, `${body} `, sig), false);
    assert.equal(verifyLanHopSignature(fixedKey(4).publicKey, 'POST', '/v2/envelopes', ts, body, sig), false);
    assert.equal(verifyLanHopSignature(key.publicKey, 'POST', '/v2/envelopes', ts, body, 'AAAA'), false);
  });

  it('lanHopTimeIsFresh accepts ±5 minutes of ISO time and refuses skew and garbage', () => {
    assert.equal(lanHopTimeIsFresh(iso(NOW_MS), NOW_MS), true);
    assert.equal(lanHopTimeIsFresh(iso(NOW_MS + HOP_MAX_SKEW_MS), NOW_MS), true);
    assert.equal(lanHopTimeIsFresh(iso(NOW_MS - HOP_MAX_SKEW_MS - 1), NOW_MS), false);
    assert.equal(lanHopTimeIsFresh(iso(NOW_MS + HOP_MAX_SKEW_MS + 1), NOW_MS), false);
    for (const ts of ['NaN', '', 'yesterday', undefined, NOW_MS]) assert.equal(lanHopTimeIsFresh(ts, NOW_MS), false, String(ts));
  });
});
