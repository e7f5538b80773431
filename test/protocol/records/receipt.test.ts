import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  RECEIPT_STATES,
  checkReceiptShape,
  compareReceipts,
  parseReceiptWire,
  receiptItemId,
  receiptRank,
  receiptWire,
  signReceipt,
  verifyReceipt,
  type DeliveryReceipt,
} from '../../../src/protocol/records/receipt.ts';
import { eachChanged, fixedKey, iso, NOW_MS } from '../fixtures.ts';

const hostKey = fixedKey(21);
const rec: DeliveryReceipt = {
  v: 1,
  type: 'receipt',
  msg: '01KBFZ2V0000000000000000AB',
  recipient: 'bob@work',
  state: 'delivered',
  at: iso(NOW_MS),
  seq: 1,
};
const acked: DeliveryReceipt = { ...rec, state: 'acked', note: 'done', did: 'booked a table', seq: 4 };

describe('delivery receipts (protocol §4.2)', () => {
  it('round-trips with and without the optional members', () => {
    for (const r of [rec, acked, { ...rec, note: '' }]) {
      const signed = signReceipt(r, hostKey);
      assert.deepEqual(verifyReceipt(signed, hostKey.publicKey), r);
      assert.deepEqual(verifyReceipt(JSON.parse(receiptWire(signed)), hostKey.publicKey), r);
    }
  });

  it('refuses another host key, a bad signature and a change of any signed member', () => {
    const signed = signReceipt(acked, hostKey);
    assert.equal(verifyReceipt(signed, fixedKey(22).publicKey), null);
    assert.equal(verifyReceipt({ ...signed, sig: signReceipt(rec, hostKey).sig }, hostKey.publicKey), null);
    assert.equal(verifyReceipt({ ...signed, sig: 'AAAA' }, hostKey.publicKey), null);
    const changes: { [K in keyof DeliveryReceipt]?: unknown } = {
      msg: '01KBFZ2V0000000000000000AC',
      recipient: 'eve@work',
      state: 'read',
      at: iso(NOW_MS + 1),
      note: 'other',
      did: 'other',
      seq: 5,
    };
    for (const [member, tampered] of eachChanged(acked, changes)) {
      assert.equal(verifyReceipt({ rec: tampered, sig: signed.sig }, hostKey.publicKey), null, member);
    }
    const { note: _note, ...withoutNote } = acked;
    assert.equal(verifyReceipt({ rec: withoutNote, sig: signed.sig }, hostKey.publicKey), null);
  });

  it('checkReceiptShape holds every limit', () => {
    const ok = (x: unknown): boolean => checkReceiptShape(x) !== null;
    assert.equal(ok({ ...rec, msg: 'a'.repeat(10) }), true);
    assert.equal(ok({ ...rec, msg: 'a'.repeat(40) }), true);
    assert.equal(ok({ ...rec, recipient: 'owner@work' }), true);
    assert.equal(ok({ ...rec, note: 'n'.repeat(500) }), true);
    assert.equal(ok({ ...acked, did: 'd'.repeat(200) }), true);
    assert.equal(ok({ ...rec, seq: Number.MAX_SAFE_INTEGER }), true);
    for (const state of RECEIPT_STATES) assert.equal(ok({ ...rec, state }), true, state);
    const bad: [string, unknown][] = [
      ['not an object', 'receipt'],
      ['array', [rec]],
      ['v', { ...rec, v: 2 }],
      ['type', { ...rec, type: 'rcpt' }],
      ['msg short', { ...rec, msg: 'a'.repeat(9) }],
      ['msg long', { ...rec, msg: 'a'.repeat(41) }],
      ['msg space', { ...rec, msg: 'a b c d e f g' }],
      ['msg number', { ...rec, msg: 1234567890123 }],
      ['recipient bare', { ...rec, recipient: 'bob' }],
      ['recipient caps', { ...rec, recipient: 'Bob@work' }],
      ['recipient role', { ...rec, recipient: 'role:ops' }],
      ['state', { ...rec, state: 'seen' }],
      ['at', { ...rec, at: String(NOW_MS) }],
      ['note long', { ...rec, note: 'n'.repeat(501) }],
      ['note type', { ...rec, note: null }],
      ['did without acked', { ...rec, state: 'read', did: 'x' }],
      ['did long', { ...acked, did: 'd'.repeat(201) }],
      ['seq 0', { ...rec, seq: 0 }],
      ['seq negative', { ...rec, seq: -1 }],
      ['seq fraction', { ...rec, seq: 1.5 }],
      ['seq unsafe', { ...rec, seq: 2 ** 53 }],
      ['seq string', { ...rec, seq: '1' }],
      ['unknown member', { ...rec, extra: 1 }],
      ['missing member', { v: 1, type: 'receipt', msg: rec.msg, recipient: rec.recipient, state: 'read', seq: 1 }],
    ];
    for (const [label, x] of bad) assert.equal(ok(x), false, label);
  });

  it('item id, wire and wire parsing', () => {
    assert.equal(receiptItemId(rec), 'receipt:01KBFZ2V0000000000000000AB:bob@work:1');
    const signed = signReceipt(rec, hostKey);
    const wire = receiptWire(signed);
    assert.equal(
      wire,
      `{"rec":{"at":"${rec.at}","msg":"${rec.msg}","recipient":"bob@work","seq":1,"state":"delivered","type":"receipt","v":1},"sig":"${signed.sig}"}`,
    );
    assert.deepEqual(parseReceiptWire(Buffer.from(wire)), signed);
    assert.equal(parseReceiptWire('{"rec":{},"sig":"x"}'), null);
    assert.equal(parseReceiptWire(`{"rec":${JSON.stringify(rec)},"sig":"x","more":1}`), null);
    assert.equal(parseReceiptWire('not json'), null);
    assert.equal(parseReceiptWire(`${'{"rec":'.repeat(100_000)}1${'}'.repeat(100_000)}`), null);
  });

  it('ranks delivered < notified < read < acked', () => {
    assert.deepEqual(RECEIPT_STATES.map(receiptRank), [0, 1, 2, 3]);
    assert.equal(receiptRank('seen'), -1);
  });

  it('compareReceipts: higher rank, then higher seq; the same record is a duplicate; the rest is stale', () => {
    const read: DeliveryReceipt = { ...rec, state: 'read', seq: 2 };
    assert.equal(compareReceipts(null, rec), 'accepted');
    assert.equal(compareReceipts(rec, read), 'accepted');
    assert.equal(compareReceipts(read, rec), 'stale');
    assert.equal(compareReceipts(read, { ...read }), 'duplicate');
    assert.equal(compareReceipts(read, { ...read, seq: 3 }), 'accepted');
    assert.equal(compareReceipts(read, { ...read, seq: 1 }), 'stale');
    assert.equal(compareReceipts(read, { ...read, at: iso(NOW_MS + 5) }), 'stale');
    assert.equal(compareReceipts(acked, { ...read, seq: 99 }), 'stale');
    assert.equal(compareReceipts({ ...rec, seq: 50 }, { ...rec, state: 'notified', seq: 2 }), 'accepted');
  });
});
