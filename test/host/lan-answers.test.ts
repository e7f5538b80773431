// The LAN answers of protocol §5: what our server answers per route (envelopes `{id, result}`,
// receipts and rotations bare strings), and how our client reads answers, §5's and our older
// `{id, status}` alike. An answer it cannot read leaves the row pending, never rejected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signReceipt } from '../../src/protocol/records/receipt.ts';
import { rotateHost } from '../../src/host/core/rotation.ts';
import { sendMail } from '../../src/host/send.ts';
import { readBatchAnswer as readAnswer, SETTLING } from '../../src/host/transport/lan/answers.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import type { OutboxRow } from '../../src/host/store/outbox-table.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

type Kind = 'envelope' | 'receipt' | 'rotation';
const SETTLING_OF = { envelope: SETTLING.envelopes, receipt: SETTLING.receipts, rotation: SETTLING.rotations } as const;

function row(id: number, kind: Kind, itemId: string): OutboxRow {
  return { id, kind, item_id: itemId } as OutboxRow;
}

/** The client's reading of `results` for rows of one kind, with that route's settling results. */
function readBatchAnswer(rows: OutboxRow[], results: unknown[]) {
  return readAnswer(rows, results, SETTLING_OF[(rows[0]?.kind ?? 'envelope') as Kind]);
}

test('the server answers envelopes {id, result} on /v2 and /v1, receipts and rotations as bare strings', async () => {
  const clock = new TestClock();
  const { a, b, aUrl } = await pairedHosts(clock);
  const { id } = sendMail(b, { from: 'bob', to: ['ann@alpha'], subject: 's', body: 'x' });
  const wire = JSON.parse(b.store.outbox.forMessage(id)[0]?.wire ?? 'null') as unknown;
  for (const [path, result] of [
    ['/v2/envelopes', 'accepted'],
    ['/v1/envelopes', 'duplicate'],
  ] as const) {
    const answer = await lanCall(aUrl, 'POST', path, { envelopes: [wire, { v: 2 }] }, b);
    assert.equal(answer.status, 200);
    const results = (answer.body as { results: Array<Record<string, unknown>> }).results;
    assert.deepEqual(
      results.map((r) => [r.id, r.result]),
      [
        [id, result],
        [null, 'rejected:bad envelope: not version 3'],
      ],
    );
  }
  const mine = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' }).id;
  const receipt = signReceipt(
    { v: 1, type: 'receipt', msg: mine, recipient: 'bob@beta', state: 'read', at: new Date(clock.now).toISOString(), seq: 1 },
    b.keys.hostKey,
  );
  const receipts = await lanCall(aUrl, 'POST', '/v1/receipts', { receipts: [receipt, receipt, 'junk'] }, b);
  assert.deepEqual(receipts.body, { results: ['accepted', 'duplicate', 'rejected:bad receipt'] });
  const rotation = rotateHost(b);
  const rotate = await lanCall(aUrl, 'POST', '/v1/rotate', { records: [rotation, rotation, {}] }, null);
  const results = (rotate.body as { results: unknown[] }).results;
  assert.deepEqual(results.slice(0, 2), ['rotated', 'current']);
  assert.match(String(results[2]), /^rejected:/);
});

test('the client reads §5 answers and our older {id, status} answers alike', () => {
  const rows = [row(1, 'envelope', 'E1'), row(2, 'envelope', 'E2'), row(3, 'envelope', 'E3')];
  const outcomes = (results: unknown[], r = rows) => readBatchAnswer(r, results).map((x) => [x.outcome, x.detail]);
  assert.deepEqual(
    outcomes([
      { id: 'E1', result: 'accepted' },
      { id: 'E2', result: 'duplicate' },
      { id: 'E3', result: 'rejected:bad envelope: x' },
    ]),
    [
      ['taken', 'accepted'],
      ['taken', 'duplicate'],
      ['rejected', 'rejected:bad envelope: x'],
    ],
  );
  assert.deepEqual(
    outcomes([
      { id: 'E1', status: 'accepted' },
      { id: 'E2', status: 'duplicate' },
      { id: 'E3', status: 'rejected:r' },
    ]),
    [
      ['taken', 'accepted'],
      ['taken', 'duplicate'],
      ['rejected', 'rejected:r'],
    ],
    'older builds of ours',
  );
  const receipts = [row(1, 'receipt', 'receipt:m:a@b:1'), row(2, 'receipt', 'receipt:m:a@b:2'), row(3, 'receipt', 'receipt:m:a@b:3')];
  assert.deepEqual(
    outcomes(['accepted', 'stale', 'rejected:bad receipt'], receipts).map(([o]) => o),
    ['taken', 'taken', 'rejected'],
  );
  assert.deepEqual(
    outcomes([{ id: 'receipt:m:a@b:1', status: 'accepted' }], receipts.slice(0, 1)).map(([o]) => o),
    ['taken'],
    'older receipt answer',
  );
  const rotations = [row(1, 'rotation', 'rotation:K1'), row(2, 'rotation', 'rotation:K2'), row(3, 'rotation', 'rotation:K3')];
  assert.deepEqual(
    outcomes(['rotated', 'current', 'rejected:old key is not the pinned key'], rotations).map(([o]) => o),
    ['taken', 'taken', 'rejected'],
  );
  assert.deepEqual(
    outcomes(
      [
        { id: 'rotation:K1', status: 'accepted' },
        { id: 'rotation:K2', status: 'duplicate' },
      ],
      rotations.slice(0, 2),
    ).map(([o]) => o),
    ['taken', 'taken'],
    'older rotation answer',
  );
});

test('an answer that cannot be read leaves its row pending with the reason, never rejected', () => {
  const rows = [row(1, 'envelope', 'E1'), row(2, 'envelope', 'E2'), row(3, 'envelope', 'E3'), row(4, 'envelope', 'E4'), row(5, 'envelope', 'E5')];
  const results = readBatchAnswer(rows, [{ id: 'E1', result: 7 }, 42, { id: 'E9', result: 'accepted' }, { id: 'E4', result: 'maybe' }]);
  assert.deepEqual(
    results.map((r) => r.outcome),
    ['failed', 'failed', 'failed', 'failed', 'failed'],
  );
  assert.deepEqual(
    results.map((r) => r.detail),
    [
      'unreadable answer: the result for this item carries no result string',
      'unreadable answer: the result for this item is neither a string nor an object',
      "unreadable answer: the result in this item's place names another item (E9)",
      'unreadable answer: unknown result "maybe"',
      'unreadable answer: the answer has no result for this item',
    ],
  );
  assert.deepEqual(
    readBatchAnswer([row(1, 'envelope', 'E1')], ['rotated']).map((r) => r.outcome),
    ['failed'],
    'a rotation word does not settle an envelope',
  );
});
