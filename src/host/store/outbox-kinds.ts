// What the outbox carries, and in which order a peer's rows leave (which path each takes is
// transport/row-path.ts). Every transport and the flush read them here.

export const OUTBOX_KINDS = ['envelope', 'receipt', 'rotation'] as const;
export type OutboxKind = (typeof OUTBOX_KINDS)[number];

/**
 * The order a peer's rows leave in: our rotation record first, so the peer re-pins our new key
 * before it meets hops and envelopes signed with it; receipts last (they are advisory).
 */
export const SENDING_ORDER: readonly OutboxKind[] = ['rotation', 'envelope', 'receipt'];

/** Compares rows for sending: by SENDING_ORDER, then oldest first. */
export function inSendingOrder(a: { kind: OutboxKind; id: number }, b: { kind: OutboxKind; id: number }): number {
  return SENDING_ORDER.indexOf(a.kind) - SENDING_ORDER.indexOf(b.kind) || a.id - b.id;
}

/** A row that must reach the peer before our others: while one is due, its transport goes first. */
export function goesFirst(kind: OutboxKind): boolean {
  return kind === SENDING_ORDER[0];
}
