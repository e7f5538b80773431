// Every request parser of src/protocol/relay-api/ refuses hostile input (wrong types, huge values,
// deep nesting, prototype keys) with its code, and never throws.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import { parseAckRequest } from '../../../src/protocol/relay-api/ack.ts';
import { parseDenyRequest } from '../../../src/protocol/relay-api/admin-deny.ts';
import { parseEncAdV1Request, parseEncAdV2Request, parseLookupByKey, parseLookupByName } from '../../../src/protocol/relay-api/enc-key.ts';
import { parseChallengeRequest, parseEnrolRequest } from '../../../src/protocol/relay-api/enrolment.ts';
import { parsePullQuery } from '../../../src/protocol/relay-api/pull.ts';
import { parsePushRequest } from '../../../src/protocol/relay-api/push.ts';
import type { Parsed, RefusalCode } from '../../../src/protocol/relay-api/refusals.ts';
import { parseRotationRequest } from '../../../src/protocol/relay-api/rotation.ts';
import { parseSenderListRequest } from '../../../src/protocol/relay-api/senders.ts';
import { parseV1AckRequest, parseV1PullQuery, parseV1PushRequest } from '../../../src/protocol/relay-api/v1-messages.ts';

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const caller = generateSigningKey();

function nested(depth: number): unknown {
  let value: unknown = {};
  for (let i = 0; i < depth; i++) value = { x: value, list: [value] };
  return value;
}

const huge = 'x'.repeat(1024 * 1024);

/** Bodies no endpoint takes: every parser below must refuse each of them. */
const HOSTILE_BODIES: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1e308,
  Number.NaN,
  'text',
  huge,
  true,
  [],
  [{}],
  {},
  nested(10_000),
  JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {}}}') as unknown,
  Object.create(null) as unknown,
];

/** For each field of interest, values of the wrong type or out of range. */
const HOSTILE_VALUES: unknown[] = [null, -1, 2 ** 53, 1e308, Number.NaN, '', huge, [], {}, nested(1_000), true];

interface Case {
  name: string;
  code: RefusalCode;
  parse: (body: unknown) => Parsed<unknown>;
  /** a valid body, whose members are replaced one by one by hostile values */
  members?: Record<string, unknown>;
}

const CASES: Case[] = [
  { name: 'challenge', code: 'BAD_ENROLMENT', parse: parseChallengeRequest, members: { host: 'laptop', pubkey: caller.publicKey } },
  { name: 'enrol', code: 'BAD_ENROLMENT', parse: parseEnrolRequest, members: { host: 'laptop', pubkey: caller.publicKey, owner_fp: '', sig: 'x' } },
  { name: 'push', code: 'BAD_PUSH', parse: (b) => parsePushRequest(b, 100) },
  { name: 'v1 push', code: 'BAD_PUSH', parse: (b) => parseV1PushRequest(b, 100) },
  { name: 'ack', code: 'EPOCH', parse: (b) => parseAckRequest(b, 'e1') },
  { name: 'v1 ack', code: 'BAD_V1_ACK', parse: parseV1AckRequest },
  { name: 'senders', code: 'SENDER_LIST_REFUSED', parse: (b) => parseSenderListRequest(b, caller.publicKey, NOW) },
  { name: 'rotate', code: 'BAD_ROTATION', parse: parseRotationRequest },
  { name: 'enc-key v2', code: 'ENC_AD_REFUSED', parse: (b) => parseEncAdV2Request(b, caller.publicKey, NOW) },
  { name: 'enc-key v1', code: 'ENC_AD_V1_RETIRED', parse: (b) => parseEncAdV1Request(b, { hostName: 'laptop', hostPubkey: caller.publicKey }) },
  { name: 'admin deny', code: 'BAD_DENY_ENTRIES', parse: (b) => parseDenyRequest(b, NOW, { maxClaimChars: 256, minAheadMs: 15 * 60_000 }) },
];

function assertRefused(result: Parsed<unknown>, code: RefusalCode, what: string): void {
  assert.equal(result.ok, false, `${what}: refused`);
  if (!result.ok) {
    assert.equal(result.refusal.code, code, what);
    assert.ok(result.refusal.message.length < 300, `${what}: a short sentence, never the input echoed`);
  }
}

test('every body parser refuses bodies of the wrong shape with its code', () => {
  for (const c of CASES) {
    for (const [i, body] of HOSTILE_BODIES.entries()) assertRefused(c.parse(body), c.code, `${c.name} body #${i}`);
  }
});

test('every member of a challenge or enrol refuses wrong types and huge values', () => {
  for (const c of CASES.filter((x) => x.members !== undefined)) {
    for (const name of Object.keys(c.members ?? {})) {
      for (const [i, value] of HOSTILE_VALUES.entries()) {
        // owner_fp may be empty; any string is a signature to check (a bad one is 401 after the challenge)
        if ((name === 'owner_fp' && value === '') || (name === 'sig' && typeof value === 'string')) continue;
        const result = c.parse({ ...c.members, [name]: value });
        assertRefused(result, c.code, `${c.name}.${name} #${i}`);
      }
    }
  }
});

test('batches: over the cap, or not a list, is refused before any item is looked at', () => {
  assertRefused(parsePushRequest({ items: new Array(101).fill({}) }, 100), 'BATCH_TOO_LARGE', 'push');
  assertRefused(parseV1PushRequest({ envelopes: new Array(101).fill({}) }, 100), 'BATCH_TOO_LARGE', 'v1 push');
  assert.deepEqual(parsePushRequest({ items: [nested(1000)] }, 100).ok, true, 'items are checked one by one later, as rejections');
});

test('ack: the epoch is judged first, then through', () => {
  assertRefused(parseAckRequest({ epoch: 'old', through: -1 }, 'e1'), 'EPOCH', 'stale epoch with a bad through');
  for (const [i, through] of HOSTILE_VALUES.entries()) assertRefused(parseAckRequest({ epoch: 'e1', through }, 'e1'), 'BAD_ACK', `through #${i}`);
  assert.deepEqual(parseAckRequest({ epoch: 'e1', through: 7 }, 'e1'), { ok: true, value: { through: 7 } });
});

test('pull queries: the after cursor, limit and wait are parsed once, a stale epoch first', () => {
  const relay = { epoch: 'e1', maxPull: 500, maxWaitS: 55 };
  for (const after of ['-1', '1.5', '01', '9007199254740993', 'abc', ' 1', '1e3', huge]) {
    assertRefused(parsePullQuery({ after }, relay), 'BAD_PULL', `after ${after.slice(0, 20)}`);
    assertRefused(parseV1PullQuery({ after }), 'BAD_PULL', `v1 after ${after.slice(0, 20)}`);
  }
  assertRefused(parsePullQuery({ after: 'abc', epoch: 'old' }, relay), 'EPOCH', 'stale epoch first');
  assertRefused(parsePullQuery({ limit: 'many' }, relay), 'BAD_PULL', 'limit');
  assert.deepEqual(parsePullQuery({ after: '5', limit: '1e9' }, relay), { ok: true, value: { after: 5, limit: 500, waitS: 0 } });
  assert.deepEqual(parsePullQuery({}, relay), { ok: true, value: { after: 0, limit: 500, waitS: 0 } });
  // wait: whole seconds, lowered to max_wait_s
  for (const wait of ['-1', '1.5', '01', 'soon', ' 5', huge]) assertRefused(parsePullQuery({ wait }, relay), 'BAD_PULL', `wait ${wait.slice(0, 20)}`);
  assert.deepEqual(parsePullQuery({ wait: '30' }, relay), { ok: true, value: { after: 0, limit: 500, waitS: 30 } });
  assert.deepEqual(parsePullQuery({ wait: '3600' }, relay), { ok: true, value: { after: 0, limit: 500, waitS: 55 } });
});

test('lookups: a base64 host key (a + may come as a space), a host name', () => {
  for (const pubkey of [undefined, '', 'not a key', huge, `${caller.publicKey}x`]) assertRefused(parseLookupByKey(pubkey), 'BAD_LOOKUP', 'pubkey');
  assert.deepEqual(parseLookupByKey(caller.publicKey.replaceAll('+', ' ')), { ok: true, value: caller.publicKey });
  for (const host of [undefined, '']) assertRefused(parseLookupByName(host), 'BAD_LOOKUP', 'host');
});

test('a sender list naming another host is refused as not its own, before its signature is checked', () => {
  const other = generateSigningKey();
  const list = { v: 1, type: 'relay-senders', host_pubkey: other.publicKey, senders: [], iat: new Date(NOW).toISOString() };
  assertRefused(parseSenderListRequest({ list, sig: 'x' }, caller.publicKey, NOW), 'SENDER_LIST_NOT_OWN', 'other host');
});
