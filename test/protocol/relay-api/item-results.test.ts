import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ITEM_REFUSALS, readRefusalStatus, refusalStatus, type ItemRefusalCode } from '../../../src/protocol/relay-api/item-results.ts';
import { isFinalRelayRefusal } from '../../../src/host/transport/row-path.ts';

const codes = Object.keys(ITEM_REFUSALS) as ItemRefusalCode[];

test('the catalogue holds every rejection reason of protocol.md §3.3 and §7.2, in the order they are checked', () => {
  assert.deepEqual(codes, [
    'rate',
    'bad item id',
    'bad kind',
    'bad targets',
    'target not enrolled',
    'sender not accepted by target',
    'duplicate target',
    'bad wire',
    'item over size limit',
    'bad envelope',
    'item id is not the envelope id',
    'envelope body is not sealed',
    'bad receipt',
    'item id is not the receipt id',
    'receipt is not signed by the sending host',
    'conflict',
    'quota:queue_items',
    'quota:queue_bytes',
    'quota:sender_items',
    'quota:sender_bytes',
    'quota:account_items',
    'quota:account_bytes',
  ]);
});

test('a status written by the relay reads back as its code on the host, with or without a detail', () => {
  for (const code of codes) {
    const read = readRefusalStatus(refusalStatus({ code }));
    assert.deepEqual(read, { code, reason: code, final: ITEM_REFUSALS[code].final });
  }
  const detailed = refusalStatus({ code: 'bad envelope', detail: 'bad meta.mentions' });
  assert.equal(detailed, 'rejected:bad envelope: bad meta.mentions');
  assert.deepEqual(readRefusalStatus(detailed), { code: 'bad envelope', reason: 'bad envelope: bad meta.mentions', final: true });
  assert.equal(readRefusalStatus('accepted'), null);
  assert.equal(readRefusalStatus('duplicate'), null);
});

test('only what can pass later is retried: rate, quotas, a target not enrolled or not naming the sender yet, and reasons this build does not know', () => {
  const retried = codes.filter((code) => !isFinalRelayRefusal(refusalStatus({ code })));
  assert.deepEqual(retried, [
    'rate',
    'target not enrolled',
    'sender not accepted by target',
    'quota:queue_items',
    'quota:queue_bytes',
    'quota:sender_items',
    'quota:sender_bytes',
    'quota:account_items',
    'quota:account_bytes',
  ]);
  for (const unknown of ['rejected:some reason from a newer relay', 'rejected:conflicting', 'rejected:quota:galaxies', 'rejected:bad kind: extra']) {
    assert.deepEqual([unknown, isFinalRelayRefusal(unknown)], [unknown, false]);
  }
});
