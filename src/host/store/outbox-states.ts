// The outbox state machine: every state a row can be in and every named move between them. The
// store (store/outbox-table.ts) builds its UPDATE guards from this table, so a move the table does
// not list cannot happen, and status, doctor and the CLI show these same state names.
//
//   queued ──handOver──▶ handed-over          (the peer host took it over the LAN)
//     │  ──reject────▶ rejected               (the peer, or every path, refused it for good)
//     │  ──giveUp────▶ undelivered            (still queued after the 72 h deadline)
//     │  ──supersede─▶ superseded             (receipts: a newer one for the same delivery)
//     │  ──relayAccept▶ relay-accepted ──repush──▶ queued   (the relay lost its store)
//     │                    │ ──settle────▶ settled      (the target's delivery receipt came)
//     │                    │ ──unconfirm─▶ unconfirmed  (our own deadline passed without it)
//     │                    │ ──expire────▶ expired      (the relay's signed expiry notice)
//     │                    └ ──bounce────▶ rejected     (the target bounced the very bytes)
//   handed-over, undelivered ──resend──▶ queued  (receipts only: a relay lost the one it carried)
//
// "settled" means one thing: a copy a relay accepted was confirmed by the target's delivery receipt.
// A row a relay accepted and queued again for a re-push (repush) can still be settled, unconfirmed,
// expired or bounced from `queued`. The column settled_at (its name is older than this table) is
// when the row last left `queued`.
import type { OutboxKind } from './outbox-kinds.ts';

export const OUTBOX_STATES = ['queued', 'handed-over', 'rejected', 'undelivered', 'superseded', 'relay-accepted', 'settled', 'unconfirmed', 'expired'] as const;
export type OutboxState = (typeof OUTBOX_STATES)[number];

export interface OutboxMove {
  readonly from: readonly OutboxState[];
  readonly to: OutboxState;
  /** only rows of these kinds make this move (default: every kind) */
  readonly kinds?: readonly OutboxKind[];
  /** only rows a relay accepted at some time (relay_accepted_at set) */
  readonly relayAcceptedOnly?: boolean;
}

/** Rows a relay accepted whose receipt has not come yet: waiting, or queued again for a re-push. */
const AWAITING_RECEIPT: readonly OutboxState[] = ['relay-accepted', 'queued'];

export const OUTBOX_MOVES = {
  handOver: { from: ['queued'], to: 'handed-over' },
  reject: { from: ['queued'], to: 'rejected' },
  giveUp: { from: ['queued'], to: 'undelivered' },
  supersede: { from: ['queued'], to: 'superseded', kinds: ['receipt'] },
  relayAccept: { from: ['queued'], to: 'relay-accepted' },
  repush: { from: ['relay-accepted'], to: 'queued' },
  settle: { from: AWAITING_RECEIPT, to: 'settled', kinds: ['envelope'], relayAcceptedOnly: true },
  unconfirm: { from: AWAITING_RECEIPT, to: 'unconfirmed', relayAcceptedOnly: true },
  expire: { from: AWAITING_RECEIPT, to: 'expired', relayAcceptedOnly: true },
  bounce: { from: ['queued', 'relay-accepted'], to: 'rejected', kinds: ['envelope'] },
  resend: { from: ['handed-over', 'undelivered'], to: 'queued', kinds: ['receipt'] },
} as const satisfies Record<string, OutboxMove>;

export type OutboxMoveName = keyof typeof OUTBOX_MOVES;

/** What a move looks at in a row. */
export type RowPosition = { state: OutboxState; kind: OutboxKind; relay_accepted_at: number | null };

/** The state `row` enters by `move`, or null when the table does not allow that move from where it is. */
export function nextState(move: OutboxMoveName, row: RowPosition): OutboxState | null {
  const rule: OutboxMove = OUTBOX_MOVES[move];
  if (!rule.from.includes(row.state)) return null;
  if (rule.kinds !== undefined && !rule.kinds.includes(row.kind)) return null;
  if (rule.relayAcceptedOnly === true && row.relay_accepted_at === null) return null;
  return rule.to;
}

/** Whether a row of `kind` in `state` can still move (false: its journey is over). */
export function canStillMove(state: OutboxState, kind: OutboxKind): boolean {
  return Object.values(OUTBOX_MOVES).some((rule: OutboxMove) => rule.from.includes(state) && (rule.kinds === undefined || rule.kinds.includes(kind)));
}
