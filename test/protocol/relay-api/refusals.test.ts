// The refusal catalogue: stable codes, each with one status, never renamed nor reused.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Refusal, REFUSALS, refusalSentence, type RefusalCode } from '../../../src/protocol/relay-api/refusals.ts';

/**
 * Every code ever issued, with its status, in the order issued: append-only. A code removed from
 * the catalogue stays here (and fails this test) so that it is never given to another meaning.
 */
const ISSUED: ReadonlyArray<[string, number]> = [
  ['BAD_JSON', 400],
  ['BODY_TOO_LARGE', 413],
  ['NOT_FOUND', 404],
  ['METHOD_NOT_ALLOWED', 405],
  ['MISSING_HOST_HEADER', 400],
  ['MALFORMED_REQUEST', 400],
  ['MALFORMED_HTTP', 400],
  ['HEADERS_TOO_LARGE', 431],
  ['REQUEST_TIMEOUT', 408],
  ['INTERNAL', 500],
  ['STORE_BUSY', 503],
  ['STORE_FULL', 507],
  ['STORE_IO', 503],
  ['STORE_SYNC_FAILED', 503],
  ['BAD_HOP', 401],
  ['TOKEN_REQUIRED', 401],
  ['TOKEN_INVALID', 401],
  ['AUTHORITY_UNAVAILABLE', 503],
  ['DENIED', 403],
  ['RATE', 429],
  ['BAD_ENROLMENT', 400],
  ['CHALLENGES_FULL', 503],
  ['NO_CHALLENGE', 401],
  ['BAD_ENROLMENT_SIGNATURE', 401],
  ['REVOKED', 403],
  ['ENROLMENTS_FULL', 503],
  ['NAME_TAKEN', 409],
  ['BAD_PUSH', 400],
  ['BATCH_TOO_LARGE', 400],
  ['BAD_PULL', 400],
  ['EPOCH', 409],
  ['BAD_ACK', 400],
  ['BAD_V1_ACK', 400],
  ['SENDER_LIST_NOT_OWN', 403],
  ['SENDER_LIST_IAT_AHEAD', 400],
  ['SENDER_LIST_BAD_SIGNATURE', 401],
  ['SENDER_LIST_REFUSED', 400],
  ['SENDER_LIST_NOT_NEWER', 409],
  ['BAD_ROTATION', 400],
  ['ROTATION_KEY_REVOKED', 409],
  ['ROTATION_UNKNOWN_KEY', 404],
  ['ENC_AD_REFUSED', 400],
  ['ENC_AD_V1_RETIRED', 410],
  ['BAD_LOOKUP', 400],
  ['UNKNOWN_HOST', 404],
  ['BAD_DENY_ENTRIES', 400],
  ['DENY_LIST_FULL', 503],
];

/** The codes clients saw in answer bodies before the catalogue, spelled as they were (README, protocol.md). */
const CODES_IN_BODIES_BEFORE = [
  'BAD_JSON',
  'BAD_ACK',
  'BAD_ROTATION',
  'TOKEN_REQUIRED',
  'TOKEN_INVALID',
  'REVOKED',
  'DENIED',
  'EPOCH',
  'NAME_TAKEN',
  'RATE',
  'AUTHORITY_UNAVAILABLE',
  'STORE_FULL',
  'STORE_IO',
  'STORE_SYNC_FAILED',
  // AgentMBX hosts read a v1 enc-key publish's answer by its status (410); the code names it for ours
  'ENC_AD_V1_RETIRED',
];

/** Codes a host's own LAN server answers (src/host/transport/lan/server.ts): the relay never gives them another meaning. */
const LAN_CODES = ['STORE_DISK'];

test('the catalogue is the issued list: every code once, with the status it was issued with', () => {
  const codes = ISSUED.map(([code]) => code);
  assert.equal(new Set(codes).size, codes.length, 'no code issued twice');
  assert.deepEqual(
    Object.entries(REFUSALS).map(([code, entry]) => [code, entry.status]),
    ISSUED,
  );
  for (const code of LAN_CODES) assert.equal(code in REFUSALS, false, `${code} belongs to the LAN server`);
  for (const [code, entry] of Object.entries(REFUSALS)) {
    assert.match(code, /^[A-Z][A-Z0-9_]*$/, code);
    assert.ok(entry.status >= 400 && entry.status < 600, code);
    assert.notEqual(entry.sentence.trim(), '', code);
  }
});

test('the codes clients already branched on keep their spelling, and stay in the body', () => {
  const inBody = Object.entries(REFUSALS)
    .filter(([, entry]) => 'codeInBody' in entry)
    .map(([code]) => code)
    .sort();
  assert.deepEqual(inBody, [...CODES_IN_BODIES_BEFORE].sort());
});

test('a refusal body is {error, code?, …members} with the sentence filled in', () => {
  assert.deepEqual(new Refusal('BAD_HOP').body(), { error: 'bad relay hop' });
  const epoch = new Refusal('EPOCH', { why: 'relay epoch changed' }, { epoch: 'e1' }).withMembers({ head_seq: 4 });
  assert.deepEqual(Object.entries(epoch.body()), [
    ['error', 'relay epoch changed: pull again from 0'],
    ['code', 'EPOCH'],
    ['epoch', 'e1'],
    ['head_seq', 4],
  ]);
  assert.equal(refusalSentence('BATCH_TOO_LARGE', { max: 3, what: 'items' }), 'at most 3 items per push');
  for (const code of Object.keys(REFUSALS) as RefusalCode[]) {
    assert.doesNotMatch(refusalSentence(code, { any: 'x' }), /\{[a-z_]+\}/, `${code}: no placeholder left unfilled`);
  }
});

test("README's table lists every code with its status", () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  for (const [code, entry] of Object.entries(REFUSALS)) assert.ok(readme.includes(`| \`${code}\` | ${entry.status} |`), code);
});
