// The pull answer (protocol.md §3.4) written straight into one Buffer. A page is up to max_pull
// items of about 1.5 KB of base64 each; as objects handed to JSON.stringify it cost about 7 ms of
// the event loop per 500-item page (strings built, scanned, copied and collected). The bytes are
// exactly what JSON.stringify would give for the same object, in the same key order.
import type { PulledItem } from '../store/relay-store.ts';
import { EncodedJson } from './encoded-json.ts';

export interface PullPageFields {
  epoch: string;
  headSeq: number;
  lastSeq: number;
  more: boolean;
}

function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

/** `{epoch, head_seq, items:[{seq, kind, item_id, sender_pubkey, wire_b64}], last_seq, more}` as UTF-8 JSON. */
export function encodePullPage(fields: PullPageFields, items: readonly PulledItem[]): EncodedJson {
  const head = `{"epoch":${JSON.stringify(fields.epoch)},"head_seq":${fields.headSeq},"items":[`;
  const tail = `],"last_seq":${fields.lastSeq},"more":${fields.more}}`;
  const prefixes = items.map(
    (item, index) =>
      `${index === 0 ? '' : ','}{"seq":${item.seq},"kind":${JSON.stringify(item.kind)},` +
      `"item_id":${JSON.stringify(item.itemId)},"sender_pubkey":${JSON.stringify(item.senderPubkey)},"wire_b64":"`,
  );
  // a UTF-16 code unit takes at most 3 bytes in UTF-8, so this bounds the page from above
  let bound = 3 * (head.length + tail.length);
  for (const [index, item] of items.entries()) bound += 3 * (prefixes[index] as string).length + base64Length(item.wire.byteLength) + 2;
  const out = Buffer.allocUnsafe(bound);
  let at = out.write(head, 0, 'utf8');
  for (const [index, item] of items.entries()) {
    at += out.write(prefixes[index] as string, at, 'utf8');
    at += out.write(Buffer.from(item.wire.buffer, item.wire.byteOffset, item.wire.byteLength).toString('base64'), at, 'latin1');
    at += out.write('"}', at, 'latin1');
  }
  at += out.write(tail, at, 'utf8');
  return new EncodedJson(out.subarray(0, at));
}
