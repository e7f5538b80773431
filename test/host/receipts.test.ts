// acceptReceipt: rank then seq, duplicates, stale receipts, and refusal of receipts for mail this
// host did not send to that host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { signReceipt, type DeliveryReceipt } from '../../src/protocol/records/receipt.ts';
import { acceptReceipt, messageStatus } from '../../src/host/core/receipts.ts';
import { sendMail } from '../../src/host/send.ts';
import { makeHost, pairedHosts, pin } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

function rec(msg: string, state: DeliveryReceipt['state'], seq: number, recipient = 'bob@beta'): DeliveryReceipt {
  return { v: 1, type: 'receipt', msg, recipient, state, at: '2026-12-02T12:00:00.000Z', seq };
}

test('receipts: higher rank wins, then higher seq; the same one is a duplicate, lower ones are stale', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const via = { transport: 'test', peerPubkey: b.keys.hostKey.publicKey };
  const sign = (r: DeliveryReceipt) => signReceipt(r, b.keys.hostKey);
  assert.equal(acceptReceipt(a, sign(rec(id, 'read', 3)), via), 'accepted');
  assert.equal(acceptReceipt(a, sign(rec(id, 'read', 3)), via), 'duplicate');
  assert.equal(acceptReceipt(a, sign(rec(id, 'delivered', 9)), via), 'stale', 'lower rank loses even with a higher seq');
  assert.equal(acceptReceipt(a, sign(rec(id, 'read', 2)), via), 'stale', 'same rank, lower seq');
  assert.equal(acceptReceipt(a, sign(rec(id, 'read', 4)), via), 'accepted', 'same rank, higher seq');
  assert.equal(acceptReceipt(a, sign(rec(id, 'acked', 5)), null), 'accepted', 'without a transport caller the record proves itself');
  assert.deepEqual(
    messageStatus(a, id)?.recipients.map((r) => [r.recipient, r.state]),
    [['bob@beta', 'acked']],
  );
});

test('receipts are refused for mail this host did not send to that host, or not signed by it', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const c = makeHost('gamma', clock, ['cy']);
  pin(a, c, 'http://127.0.0.1:1');
  const toBeta = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' }).id;
  const localOnly = sendMail(a, { from: 'ann', to: ['al'], subject: 's', body: 'x' }).id;
  const viaB = { transport: 'test', peerPubkey: b.keys.hostKey.publicKey };
  assert.equal(acceptReceipt(a, signReceipt(rec('01ARZ3NDEKTSV4RRFFQ69G5FAV', 'read', 1), b.keys.hostKey), viaB), 'rejected:not mail this host sent to beta');
  assert.equal(acceptReceipt(a, signReceipt(rec(localOnly, 'read', 1), b.keys.hostKey), viaB), 'rejected:not mail this host sent to beta');
  // gamma claims a delivery of mail that went to beta only.
  const viaC = { transport: 'test', peerPubkey: c.keys.hostKey.publicKey };
  assert.equal(acceptReceipt(a, signReceipt(rec(toBeta, 'read', 1, 'cy@gamma'), c.keys.hostKey), viaC), 'rejected:not mail this host sent to gamma');
  // gamma forwards a receipt in beta's name: not from the recipient host.
  assert.equal(acceptReceipt(a, signReceipt(rec(toBeta, 'read', 1), b.keys.hostKey), viaC), 'rejected:receipt is not from the recipient host');
  assert.equal(acceptReceipt(a, signReceipt(rec(toBeta, 'read', 1), generateSigningKey()), viaB), 'rejected:bad signature');
  assert.equal(acceptReceipt(a, { rec: { ...rec(toBeta, 'read', 1), seq: 0 }, sig: 'x' }, viaB), 'rejected:bad receipt');
  assert.equal(acceptReceipt(a, signReceipt(rec(toBeta, 'read', 1, 'bob@delta'), b.keys.hostKey), null), 'rejected:recipient host is not paired');
  assert.equal(a.store.receipts.forMessage(toBeta).length, 0);
});
