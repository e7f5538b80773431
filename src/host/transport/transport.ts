// What a transport does for the outbox: carry a peer's due rows and say, per row, how it went.
// Two transports carry rows: the LAN (lan/) and the relay (relay/); row-path.ts picks per row.
import type { OutboxRow, RelayAcceptance } from '../store/outbox-table.ts';
import type { PeerRow } from '../store/peers-table.ts';

/**
 * taken: the peer (or the relay, for it) has it: accepted, duplicate, or a receipt it found stale
 * (the row is handed over, or waits relay-accepted for its delivery receipt; store/outbox-states.ts);
 * rejected: the peer refused it for good; refused: this path (the relay) refused it for good, another
 * path may still carry it; failed: try again later (no answer, error, no result).
 */
export type RowOutcome = 'taken' | 'rejected' | 'refused' | 'failed';

export interface RowResult {
  rowId: number;
  outcome: RowOutcome;
  /** the peer's status or the error, for the row and for alerts */
  detail: string;
  /** set by the relay on a valid accept of an envelope: the row then waits for its delivery receipt */
  relay?: RelayAcceptance;
}

export interface Transport {
  readonly name: string;
  /** Delivers rows (all for `peer`); a row missing from the answer counts as failed. */
  deliver(peer: PeerRow, rows: readonly OutboxRow[]): Promise<RowResult[]>;
}

/** Picks the transport for one of a peer's rows (row-path.ts's chooseTransport in the daemon). */
export type TransportChooser = (peer: PeerRow, row: OutboxRow) => Transport;
