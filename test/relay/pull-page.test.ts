// The pull page is written as bytes by hand; it must be exactly what JSON.stringify gives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodePullPage } from '../../src/relay/core/pull-page.ts';
import type { PulledItem } from '../../src/relay/store/relay-store.ts';

function expected(fields: { epoch: string; headSeq: number; lastSeq: number; more: boolean }, items: PulledItem[]): string {
  return JSON.stringify({
    epoch: fields.epoch,
    head_seq: fields.headSeq,
    items: items.map((i) => ({ seq: i.seq, kind: i.kind, item_id: i.itemId, sender_pubkey: i.senderPubkey, wire_b64: Buffer.from(i.wire).toString('base64') })),
    last_seq: fields.lastSeq,
    more: fields.more,
  });
}

test('an empty page is the same JSON as JSON.stringify gives', () => {
  const fields = { epoch: 'e1', headSeq: 0, lastSeq: 7, more: false };
  assert.equal(encodePullPage(fields, []).bytes.toString('utf8'), expected(fields, []));
});

test('items with awkward ids and wires of every length mod 3 encode exactly as JSON.stringify does', () => {
  const ids = ['plain', 'quote"back\\slash', 'new\nline\u0001ctl', 'é ü 中文', '😀 pair', '\ud800 lone surrogate', ''];
  const items: PulledItem[] = ids.map((itemId, index) => ({
    seq: 1_700_000_000_000 + index,
    kind: index % 2 === 0 ? 'envelope' : 'receipt',
    itemId,
    senderPubkey: `sender+/${index}=`,
    // a view into a bigger buffer: the encoder must honour byteOffset
    wire: new Uint8Array(Buffer.from(`..${'w'.repeat(index)}\u00ff..`, 'latin1')).subarray(2, 2 + index + 1),
  }));
  const fields = { epoch: 'ep"och', headSeq: 99, lastSeq: 1_700_000_000_006, more: true };
  const bytes = encodePullPage(fields, items).bytes;
  assert.equal(bytes.toString('utf8'), expected(fields, items));
  assert.deepEqual(
    JSON.parse(bytes.toString('utf8')).items.map((i: { item_id: string }) => i.item_id),
    ids.map((id) => JSON.parse(JSON.stringify(id)) as string),
  );
});
