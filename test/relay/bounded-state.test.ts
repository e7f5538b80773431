// The relay's in-memory tables stay bounded (design §2): open challenges and rate windows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHALLENGE_LIFE_MS, MAX_OPEN_CHALLENGES } from '../../src/relay/config.ts';
import { ChallengeTable } from '../../src/relay/core/challenges.ts';
import { RATE_WINDOW_MS, RateWindow } from '../../src/common/rate-window.ts';
import { toBase64 } from '../../src/protocol/base64.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { REFUSAL_HEADER, REFUSALS } from '../../src/protocol/relay-api/refusals.ts';
import { startTestRelay } from '../helpers/relay-fixture.ts';

/** A deterministic source of "random" bytes: a counter, so every challenge differs. */
function counterRandom(): (n: number) => Uint8Array {
  let next = 0;
  return (n) => {
    const bytes = Buffer.alloc(n);
    bytes.writeUInt32BE(next++ >>> 0, 0);
    return bytes;
  };
}

const keyOf = (i: number): string => `key-${i}`;

test('challenge table: full of live challenges → null; expired ones are dropped first', async () => {
  const table = new ChallengeTable(counterRandom());
  const t0 = 1_000_000;
  for (let i = 0; i < MAX_OPEN_CHALLENGES; i++) assert.notEqual(await table.issue(keyOf(i), t0), null);
  assert.equal(table.size, MAX_OPEN_CHALLENGES);
  assert.equal(await table.issue('one-too-many', t0 + 1), null, 'over the cap while all are live');
  assert.equal(table.size, MAX_OPEN_CHALLENGES);

  // a key that already holds a challenge may replace it even when the table is full
  assert.notEqual(await table.issue(keyOf(5), t0 + 2), null);
  assert.equal(table.size, MAX_OPEN_CHALLENGES);

  // once the first ones expire, room is made by dropping them, never a live one
  const later = t0 + CHALLENGE_LIFE_MS;
  const fresh = await table.issue('late-comer', later);
  assert.notEqual(fresh, null);
  assert.ok(table.size <= MAX_OPEN_CHALLENGES);
  assert.equal(await table.take(keyOf(0), later), null, 'the expired one is gone');
  assert.notEqual(await table.take(keyOf(5), later), null, 'the replaced (younger) one is still live');
  assert.equal(await table.take('late-comer', later + 1), fresh);
});

test('challenge table: single use, replaced by a new one, dead after five minutes', async () => {
  const table = new ChallengeTable(counterRandom());
  const first = await table.issue('k', 0);
  const second = await table.issue('k', 1);
  assert.notEqual(first, second);
  assert.equal(table.size, 1, 'one open challenge per key');
  assert.equal(await table.take('k', 2), second);
  assert.equal(await table.take('k', 3), null, 'single use');
  await table.issue('k', 10);
  assert.equal(await table.take('k', 10 + CHALLENGE_LIFE_MS), null, 'expired at five minutes');
});

test('a full challenge table makes the challenge route answer 503 CHALLENGES_FULL', async () => {
  const relay = await startTestRelay();
  const challenges = relay.service.core.context.challenges;
  // a thousand at a time: where challenges live in the store, concurrent ones share commits
  for (let from = 0; from < MAX_OPEN_CHALLENGES; from += 1_000) {
    const issued = await Promise.all(Array.from({ length: 1_000 }, (_, i) => challenges.issue(keyOf(from + i), relay.clock.now)));
    assert.ok(!issued.includes(null), 'every challenge below the cap is issued');
  }
  const answer = await fetch(`${relay.url}/v1/relay/challenge`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ host: 'laptop', pubkey: generateSigningKey().publicKey }),
  });
  assert.equal(answer.status, REFUSALS.CHALLENGES_FULL.status);
  assert.equal(answer.headers.get(REFUSAL_HEADER), 'CHALLENGES_FULL');
  const body = (await answer.json()) as { error: string; code?: string };
  assert.match(body.error, /too many open enrolment challenges/);
  assert.equal(body.code, 'codeInBody' in REFUSALS.CHALLENGES_FULL ? 'CHALLENGES_FULL' : undefined);
  relay.clock.advance(CHALLENGE_LIFE_MS);
  const later = await fetch(`${relay.url}/v1/relay/challenge`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ host: 'laptop', pubkey: toBase64(Buffer.alloc(32, 9)) }),
  });
  assert.equal(later.status, 200, 'expired challenges make room');
});

test('rate window: the limit per key per minute, a fresh window after a minute', () => {
  const rate = new RateWindow(3, 10);
  for (let i = 0; i < 3; i++) assert.equal(rate.take('a', 100 + i), true);
  assert.equal(rate.take('a', 200), false);
  assert.equal(rate.take('b', 200), true, 'another key has its own budget');
  assert.equal(rate.take('a', 100 + RATE_WINDOW_MS - 1), false);
  assert.equal(rate.take('a', 100 + RATE_WINDOW_MS), true);
});

test('rate window: a hard cap on keys, the stalest window is dropped', () => {
  const rate = new RateWindow(1, 100);
  for (let i = 0; i < 1_000; i++) rate.take(keyOf(i), i);
  assert.equal(rate.size, 100);
  // the newest keys are still remembered (and over their budget), the oldest were dropped
  assert.equal(rate.take(keyOf(999), 1_000), false);
  assert.equal(rate.take(keyOf(0), 1_000), true);
  assert.equal(rate.size, 100);
});
