// What the outbox carries, and the rules that go by kind: in which order a peer's rows leave, and
// which kind never takes the relay. Every transport and the flush read them here.

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

/**
 * Rotation records go over the LAN only (ours, design §10): the peer learns our new key from the
 * record itself, and the relay already moved our queue over when we rotated there.
 */
export function lanOnly(kind: OutboxKind): boolean {
  return kind === 'rotation';
}
