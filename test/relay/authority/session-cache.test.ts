// The in-memory session table of a hosted relay: by jti and token hash, until exp, capped, and
// dropped by deny-list keys.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_SESSIONS, SessionCache, type Session } from '../../../src/relay/authority/session-cache.ts';

const session = (jti: string, fields: Partial<Session> = {}): Session => ({
  jti,
  tokenHash: `hash-${jti}`,
  hostPubkey: 'host',
  hostFp: 'aaaa-bbbb-cccc-dddd',
  clientId: 'client',
  jkt: 'jkt',
  expMs: 1000,
  ...fields,
});

test('a session is found by jti and token hash until its exp', () => {
  const cache = new SessionCache();
  cache.put(session('j1'));
  assert.equal(cache.get('j1', 'hash-j1', 999)?.jti, 'j1');
  assert.equal(cache.get('j1', 'another token with the same jti', 999), null);
  assert.equal(cache.get('j2', 'hash-j2', 999), null);
  assert.equal(cache.get('j1', 'hash-j1', 1000), null, 'gone at exp');
  assert.equal(cache.size, 0, 'an expired session is removed when met');
});

test('deny-list keys drop the sessions they name', () => {
  const cache = new SessionCache();
  cache.put(session('a', { hostFp: 'host-a' }));
  cache.put(session('b', { hostFp: 'host-b', clientId: 'client-b' }));
  cache.put(session('c', { hostFp: 'host-c', clientId: 'client-c' }));
  assert.equal(cache.drop(new Set(['host-a']), new Set(['client-c'])), 2);
  assert.deepEqual([cache.get('a', 'hash-a', 0), cache.get('c', 'hash-c', 0)], [null, null]);
  assert.equal(cache.get('b', 'hash-b', 0)?.jti, 'b');
});

test('the table holds at most MAX_SESSIONS, dropping the oldest', () => {
  const cache = new SessionCache();
  for (let i = 0; i <= MAX_SESSIONS; i++) cache.put(session(`j${i}`));
  assert.equal(cache.size, MAX_SESSIONS);
  assert.equal(cache.get('j0', 'hash-j0', 0), null, 'the oldest went');
  assert.equal(cache.get(`j${MAX_SESSIONS}`, `hash-j${MAX_SESSIONS}`, 0)?.jti, `j${MAX_SESSIONS}`);
});
