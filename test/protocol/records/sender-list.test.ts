import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_SENDERS, SENDER_LIST_MAX_FUTURE_MS, checkSenderList, signSenderList, type SenderListRecord } from '../../../src/protocol/records/sender-list.ts';
import { BAD_KEYS, eachChanged, fixedKey, iso, NOW_MS } from '../fixtures.ts';

const target = fixedKey(41);
const senders = [fixedKey(42).publicKey, fixedKey(43).publicKey];
const list: SenderListRecord = { v: 1, type: 'relay-senders', host_pubkey: target.publicKey, senders, iat: iso(NOW_MS) };

function problem(x: unknown, sig: unknown, nowMs = NOW_MS): string {
  const result = checkSenderList(x, sig, nowMs);
  return result.ok ? 'ok' : result.problem;
}

/** Signs whatever object it is given, so a shape refusal is not a signature refusal. */
function signed(x: object): string {
  return signSenderList(x as SenderListRecord, target);
}

describe('sender allowlists (protocol §3.6, §7.16)', () => {
  it('round-trips and reports iat in milliseconds', () => {
    const result = checkSenderList(list, signSenderList(list, target), NOW_MS);
    assert.deepEqual(result, { ok: true, list, iatMs: NOW_MS });
    assert.equal(problem({ ...list, senders: [] }, signed({ ...list, senders: [] })), 'ok');
  });

  it('refuses a bad signature, another signer, and a change of any signed member', () => {
    const sig = signSenderList(list, target);
    assert.equal(problem(list, 'AAAA'), 'bad signature');
    assert.equal(problem(list, signSenderList(list, fixedKey(44))), 'bad signature');
    const changes: { [K in keyof SenderListRecord]?: unknown } = {
      host_pubkey: fixedKey(44).publicKey,
      senders: [senders[0]],
      iat: iso(NOW_MS - 1),
    };
    for (const [member, tampered] of eachChanged(list, changes)) assert.equal(problem(tampered, sig), 'bad signature', member);
  });

  it('refuses a malformed list', () => {
    const cases: unknown[] = [
      null,
      [],
      { ...list, v: 2 },
      { ...list, type: 'senders' },
      { ...list, senders: 'all' },
      { ...list, iat: NOW_MS },
      { ...list, iat: '2026-12-02' },
      { ...list, extra: 1 },
      { v: 1, type: 'relay-senders', host_pubkey: target.publicKey, senders },
      ...BAD_KEYS.map((k) => ({ ...list, host_pubkey: k })),
    ];
    for (const x of cases) assert.equal(problem(x, typeof x === 'object' && x !== null ? signed(x) : ''), 'malformed', JSON.stringify(x));
  });

  it('one invalid sender key refuses the whole list', () => {
    for (const bad of BAD_KEYS) {
      const x = { ...list, senders: [...senders, bad] };
      assert.equal(problem(x, signed(x)), 'bad sender key', String(bad));
    }
  });

  it(`holds at most ${MAX_SENDERS} senders`, () => {
    const full = { ...list, senders: Array<string>(MAX_SENDERS).fill(senders[0] ?? '') };
    assert.equal(problem(full, signed(full)), 'ok');
    const over = { ...list, senders: Array<string>(MAX_SENDERS + 1).fill(senders[0] ?? '') };
    assert.equal(problem(over, signed(over)), 'too many senders');
  });

  it('refuses an iat more than 5 minutes ahead; a past iat is fine', () => {
    const edge = { ...list, iat: iso(NOW_MS + SENDER_LIST_MAX_FUTURE_MS) };
    assert.equal(problem(edge, signed(edge)), 'ok');
    const ahead = { ...list, iat: iso(NOW_MS + SENDER_LIST_MAX_FUTURE_MS + 1) };
    assert.equal(problem(ahead, signed(ahead)), 'iat in the future');
    const old = { ...list, iat: iso(NOW_MS - 365 * 86_400_000) };
    assert.equal(problem(old, signed(old)), 'ok');
  });
});
