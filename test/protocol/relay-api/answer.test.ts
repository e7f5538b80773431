// Reading a relay's answer: the code from the body, else the header, else the endpoint's table of
// what a bare status means on a relay that names no codes; anything else is UNKNOWN.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEncAdPublishAnswer } from '../../../src/protocol/relay-api/enc-key.ts';
import { readPullAnswer } from '../../../src/protocol/relay-api/pull.ts';
import { readRotationAnswer } from '../../../src/protocol/relay-api/rotation.ts';
import { readSenderListAnswer } from '../../../src/protocol/relay-api/senders.ts';

const answer = (status: number, body: unknown, refusalCode: string | null = null) => ({ status, body, refusalCode });
const codeOf = (reply: { ok: boolean; code?: string }): string | undefined => (reply.ok ? undefined : reply.code);

test('a code in the body wins; the header names the others', () => {
  assert.equal(codeOf(readPullAnswer(answer(409, { error: 'x', code: 'EPOCH', epoch: 'e2' }))), 'EPOCH');
  assert.equal(codeOf(readPullAnswer(answer(401, { error: 'bad relay hop' }, 'BAD_HOP'))), 'BAD_HOP');
  const refused = readPullAnswer(answer(400, { error: 'after must be a non-negative integer' }, 'BAD_PULL'));
  assert.deepEqual(refused, {
    ok: false,
    code: 'BAD_PULL',
    error: 'HTTP 400: after must be a non-negative integer',
    body: { error: 'after must be a non-negative integer' },
  });
});

test('a relay that names no code is read by the endpoint: 401 a bad hop, 404 to a v2 ad an older relay, 409 to a sender list one as new', () => {
  assert.equal(codeOf(readPullAnswer(answer(401, { error: 'bad relay hop' }))), 'BAD_HOP');
  assert.equal(codeOf(readEncAdPublishAnswer(answer(404, { error: 'not found' }))), 'NOT_FOUND');
  assert.equal(codeOf(readSenderListAnswer(answer(409, { error: 'older' }))), 'SENDER_LIST_NOT_NEWER');
  assert.equal(codeOf(readRotationAnswer(answer(404, {}))), 'ROTATION_UNKNOWN_KEY');
  assert.equal(codeOf(readPullAnswer(answer(409, 'not json'))), 'UNKNOWN', 'no table entry: unknown');
});

test('a code this host does not know, and a 200 it cannot read, are UNKNOWN', () => {
  assert.equal(codeOf(readPullAnswer(answer(400, { error: 'x', code: 'FROM_THE_FUTURE' }))), 'UNKNOWN');
  assert.equal(codeOf(readPullAnswer(answer(200, { items: 'not a list' }))), 'UNKNOWN');
  const page = readPullAnswer(
    answer(200, {
      epoch: 'e',
      head_seq: 2,
      items: [{ seq: 1, kind: 'envelope', item_id: 'i', sender_pubkey: 'k', wire_b64: 'e30=' }, { seq: -1 }],
      last_seq: 1,
      more: false,
    }),
  );
  assert.ok(page.ok);
  assert.equal(page.value.items.length, 1, 'an item a host cannot read is left out');
});
