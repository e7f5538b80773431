// Flushing the outbox: due rows go to a transport peer by peer; each row settles only on its own
// result. Failures back off (5 s × 2^attempts, at most 1 h); a rejected envelope and an envelope
// still undelivered after 72 h each alert its sender.
import { failPoint } from '../failpoint.ts';
import { fingerprint } from '../protocol/fingerprint.ts';
import { alertLocal } from './alerts.ts';
import type { HostNode } from './node.ts';
import type { OutboxKind, OutboxRow, RelayAcceptance } from './store/outbox-table.ts';
import type { PeerRow } from './store/peers-table.ts';
import type { RowResult, Transport } from './transport/transport.ts';

export const BACKOFF_BASE_MS = 5_000;
export const BACKOFF_MAX_MS = 60 * 60 * 1000;
/** An envelope (or receipt) row still queued this long after it was written is given up. */
export const DELIVERY_DEADLINE_MS = 72 * 60 * 60 * 1000;
/** Most rows one flush takes from the store (the rest wait for the next tick). */
export const FLUSH_ROWS_MAX = 1000;

export function backoffMs(attempts: number): number {
  return Math.min(BACKOFF_BASE_MS * 2 ** Math.min(attempts, 30), BACKOFF_MAX_MS);
}

function senderAgent(node: HostNode, msgId: string | null): { agent: string; subject: string } | null {
  const msg = msgId === null ? undefined : node.store.mail.message(msgId);
  if (msg === undefined) return null;
  return { agent: msg.from_addr.slice(0, msg.from_addr.indexOf('@')), subject: msg.subject };
}

/** Gives up envelope and receipt rows past the deadline; envelopes alert their sender. */
export function expireOverdue(node: HostNode): number {
  const now = node.nowMs();
  let expired = 0;
  for (const kind of ['envelope', 'receipt'] as const) {
    for (const row of node.store.outbox.queuedBefore(kind, now - DELIVERY_DEADLINE_MS, FLUSH_ROWS_MAX)) {
      if (!node.store.outbox.settle(row.id, 'undelivered', null, row.last_error, now)) continue;
      expired++;
      const sender = kind === 'envelope' ? senderAgent(node, row.msg_id) : null;
      if (sender !== null) {
        alertLocal(node, sender.agent, `Undelivered to ${row.peer_host}: ${sender.subject}`,
          `Message ${row.item_id} could not be delivered to ${row.peer_host} within 72 hours`
          + `${row.last_error === null ? '' : ` (last error: ${row.last_error})`}. It will not be retried.`, row.msg_id);
      }
    }
  }
  return expired;
}

function applyResult(node: HostNode, transport: Transport | null, row: OutboxRow, result: RowResult): void {
  const via = transport?.name ?? null;
  const now = node.nowMs();
  const { outcome, detail } = result;
  if (outcome === 'settled' && result.relay !== undefined) {
    node.store.transaction(() => {
      node.store.outbox.relayAccept(row.id, result.relay as RelayAcceptance, now);
      // The receipt may have come first (the relay's answer to an earlier push was lost): settled now.
      if (row.msg_id !== null && node.store.receipts.forMessage(row.msg_id).some((r) => r.peer_host === row.peer_host)) {
        node.store.outbox.settleByReceipt(row.msg_id, row.peer_host, now);
      }
    });
  } else if (outcome === 'settled') {
    node.store.outbox.settle(row.id, 'handed-over', via, null, now);
  } else if (outcome === 'refused') {
    // Final for the relay only: the transport chooser sends the row over the LAN or settles it rejected.
    node.store.outbox.refuseOnRelay(row.id, detail, now);
  } else if (outcome === 'rejected') {
    if (node.store.outbox.settle(row.id, 'rejected', via, detail, now) && row.kind === 'envelope') {
      const sender = senderAgent(node, row.msg_id);
      if (sender !== null) {
        const who = row.relay_refused === null ? row.peer_host : `the relay and ${row.peer_host}`;
        alertLocal(node, sender.agent, `Rejected by ${row.peer_host}: ${sender.subject}`,
          `Message ${row.item_id} to ${row.peer_host} was refused (by ${who}): ${detail}. It will not be retried.`, row.msg_id);
      }
    }
  } else {
    node.store.outbox.retryLater(row.id, detail, now + backoffMs(row.attempts));
  }
}

// Rotation records travel first, so a peer re-pins before it checks our newly signed hops.
const KIND_ORDER: Record<string, number> = { rotation: 0, envelope: 1, receipt: 2 };

export type FlushReport = (row: OutboxRow, result: RowResult) => void;

/** Picks the transport for one of a peer's rows (the LAN for now; the relay joins it later). */
export type TransportChooser = (peer: PeerRow, row: OutboxRow) => Transport;

/**
 * One pass over the due rows: each peer's rows go to the transport chosen for them, and every
 * row settles on its own result; `report` hears each. Returns how many rows were offered.
 */
export async function flushOutbox(node: HostNode, choose: Transport | TransportChooser, report?: FlushReport): Promise<number> {
  const pick: TransportChooser = typeof choose === 'function' ? choose : () => choose;
  expireOverdue(node);
  const due = node.store.outbox.due(node.nowMs(), FLUSH_ROWS_MAX);
  const byPeer = new Map<string, OutboxRow[]>();
  for (const row of due) {
    const list = byPeer.get(row.peer_host);
    if (list === undefined) byPeer.set(row.peer_host, [row]);
    else list.push(row);
  }
  await Promise.all([...byPeer].map(async ([host, rows]) => {
    const peer = node.store.peers.get(host);
    if (peer === undefined) {
      for (const row of rows) applyResult(node, null, row, { rowId: row.id, outcome: 'rejected', detail: `host ${host} is no longer paired` });
      return;
    }
    rows.sort((a, b) => (KIND_ORDER[a.kind] ?? 9) - (KIND_ORDER[b.kind] ?? 9) || a.id - b.id);
    const byTransport = new Map<Transport, OutboxRow[]>();
    for (const row of rows) {
      const transport = pick(peer, row);
      const list = byTransport.get(transport);
      if (list === undefined) byTransport.set(transport, [row]);
      else list.push(row);
    }
    // One transport at a time per peer, so rotation records still go first.
    for (const [transport, batch] of byTransport) {
      let results: RowResult[];
      try {
        results = await transport.deliver(peer, batch);
      } catch (err) {
        const detail = err instanceof Error ? err.message : String(err);
        results = batch.map((row) => ({ rowId: row.id, outcome: 'failed' as const, detail }));
      }
      failPoint('outbox-before-settle');
      const byRow = new Map(results.map((r) => [r.rowId, r]));
      for (const row of batch) {
        const result = byRow.get(row.id) ?? { rowId: row.id, outcome: 'failed' as const, detail: 'no result for this item' };
        applyResult(node, transport, row, result);
        report?.(row, result);
      }
    }
  }));
  return due.length;
}

export interface OutboxOverview {
  /** rows per kind (envelope: one per message and remote host; receipt; rotation), then per state */
  outbox: Record<OutboxKind, Record<string, number>>;
  /** rows a relay carries: queued for it again, waiting for a receipt, or ended on the relay's path */
  relay: { url: string; state: string; detail: string | null; fingerprint: string; rows: Record<string, number> } | null;
}

/** The outbox per state, and the relay's rows per state (`agentmbx status`). */
export function outboxOverview(node: HostNode): OutboxOverview {
  const relay = node.store.relay.get();
  return {
    outbox: node.store.outbox.countsByKindAndState(),
    relay: relay === undefined ? null : {
      url: relay.url, state: relay.state, detail: relay.detail, fingerprint: fingerprint(relay.relay_pubkey), rows: node.store.outbox.relayCountsByState(),
    },
  };
}
