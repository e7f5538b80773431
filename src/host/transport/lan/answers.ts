// Reading a peer's answer to a batch (protocol §5): `results[i]` answers the i-th element sent.
// Envelope answers are `{id, result}`; receipt and rotation answers are bare strings. For one
// release the older answers of our own builds (`{id, status}` for every route) are read too.
import { isPlainObject } from '../../../protocol/validate.ts';
import type { OutboxRow } from '../../store/outbox-table.ts';
import type { RowOutcome, RowResult } from '../transport.ts';

/**
 * The results that settle a row, per route. `rotated`/`current` are §5's rotation answers
 * (`current`: already applied); `accepted`/`duplicate` on a rotation are our older builds'.
 * A receipt the peer found `stale` is settled too: a higher state is already there.
 */
export const SETTLING = {
  envelopes: ['accepted', 'duplicate'],
  receipts: ['accepted', 'duplicate', 'stale'],
  rotations: ['rotated', 'current', 'accepted', 'duplicate'],
} as const satisfies Record<string, readonly string[]>;

/** The result string an element carries for `itemId`, or why it cannot be read. */
function resultOf(element: unknown, itemId: string): { result: string } | { unreadable: string } {
  if (typeof element === 'string') return { result: element };
  if (element === undefined) return { unreadable: 'the answer has no result for this item' };
  if (!isPlainObject(element)) return { unreadable: 'the result for this item is neither a string nor an object' };
  if (typeof element.id === 'string' && element.id !== itemId)
    return { unreadable: `the result in this item's place names another item (${element.id.slice(0, 80)})` };
  if (typeof element.result === 'string') return { result: element.result };
  if (typeof element.status === 'string') return { result: element.status };
  return { unreadable: 'the result for this item carries no result string' };
}

function outcomeOf(settling: readonly string[], result: string): RowOutcome {
  if (settling.includes(result)) return 'taken';
  if (result.startsWith('rejected:')) return 'rejected';
  return 'failed';
}

/**
 * One RowResult per row, from the answer's `results` list. A result that cannot be read (missing,
 * not a string, another item's, or a string we do not know) leaves the row pending (`failed`, tried
 * again) with the reason as its detail; it is never taken as a rejection.
 */
export function readBatchAnswer(rows: readonly OutboxRow[], results: readonly unknown[], settling: readonly string[]): RowResult[] {
  return rows.map((row, i): RowResult => {
    const read = resultOf(results[i], row.item_id);
    if ('unreadable' in read) return { rowId: row.id, outcome: 'failed', detail: `unreadable answer: ${read.unreadable}` };
    const outcome = outcomeOf(settling, read.result);
    const detail = outcome === 'failed' ? `unreadable answer: unknown result "${read.result.slice(0, 80)}"` : read.result;
    return { rowId: row.id, outcome, detail };
  });
}
