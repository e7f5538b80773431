// Flushing the outbox: due rows go to a transport peer by peer (in the daemon, each peer and
// transport in its own lane); each row moves (store/outbox-states.ts) only on its own result.
// Failures back off (core/outbox-pace.ts: 5 s × 2^attempts, at most 1 h); a rejected envelope and
// an envelope still undelivered after 72 h each alert its sender.
import { failPoint } from '../failpoint.ts';
import { fingerprint } from '../protocol/fingerprint.ts';
import { alertLocal, senderOf } from './core/alerts.ts';
import type { DeliveryLanes } from './delivery-lanes.ts';
import type { HostNode } from './core/node.ts';
import { backoffMs, FLUSH_ROWS_MAX } from './core/outbox-pace.ts';
import { goesFirst, inSendingOrder, type OutboxKind } from './store/outbox-kinds.ts';
import type { OutboxRow, RelayAcceptance } from './store/outbox-table.ts';
import type { PeerRow } from './store/peers-table.ts';
import type { RowResult, Transport, TransportChooser } from './transport/transport.ts';

/** An envelope (or receipt) row still queued this long after it was written is given up. */
export const DELIVERY_DEADLINE_MS = 72 * 60 * 60 * 1000;
/** Gives up envelope and receipt rows past the deadline; envelopes alert their sender. */
export function expireOverdue(node: HostNode): number {
  const now = node.nowMs();
  let expired = 0;
  for (const kind of ['envelope', 'receipt'] as const) {
    for (const row of node.store.outbox.queuedBefore(kind, now - DELIVERY_DEADLINE_MS, FLUSH_ROWS_MAX)) {
      // the row's end and its alert commit together: a crash between them would leave a silent end
      node.store.transaction(() => {
        if (!node.store.outbox.end(row.id, 'giveUp', now, { transport: null })) return;
        expired++;
        const sender = kind === 'envelope' ? senderOf(node, row.msg_id) : null;
        if (sender !== null) {
          alertLocal(
            node,
            sender.agent,
            `Undelivered to ${row.peer_host}: ${sender.subject}`,
            `Message ${row.item_id} could not be delivered to ${row.peer_host} within 72 hours` +
              `${row.last_error === null ? '' : ` (last error: ${row.last_error})`}. It will not be retried.`,
            row.msg_id,
          );
        }
      });
    }
  }
  return expired;
}

function applyResult(node: HostNode, transport: Transport | null, row: OutboxRow, result: RowResult): void {
  const via = transport?.name ?? null;
  const now = node.nowMs();
  const { outcome, detail } = result;
  if (outcome === 'taken' && result.relay !== undefined) {
    node.store.transaction(() => {
      node.store.outbox.relayAccept(row.id, result.relay as RelayAcceptance, now);
      // The receipt may have come first (the relay's answer to an earlier push was lost): settled now.
      if (row.msg_id !== null && node.store.receipts.forMessage(row.msg_id).some((r) => r.peer_host === row.peer_host)) {
        node.store.outbox.settleByReceipt(row.msg_id, row.peer_host, now);
      }
    });
  } else if (outcome === 'taken') {
    node.store.outbox.end(row.id, 'handOver', now, { transport: via, error: null });
  } else if (outcome === 'refused') {
    // Final for the relay only: the transport chooser sends the row over the LAN or ends it rejected.
    node.store.outbox.refuseOnRelay(row.id, detail, now);
  } else if (outcome === 'rejected') {
    node.store.transaction(() => {
      if (!node.store.outbox.end(row.id, 'reject', now, { transport: via, error: detail }) || row.kind !== 'envelope') return;
      const sender = senderOf(node, row.msg_id);
      if (sender === null) return;
      if (row.relay_refused === null) {
        alertLocal(
          node,
          sender.agent,
          `Rejected by ${row.peer_host}: ${sender.subject}`,
          `${row.peer_host} refused message ${row.item_id}: ${detail}. It will not be retried.`,
          row.msg_id,
        );
      } else {
        alertLocal(
          node,
          sender.agent,
          `Undeliverable to ${row.peer_host}: ${sender.subject}`,
          `Message ${row.item_id} could not reach ${row.peer_host}: ${detail}. It will not be retried.`,
          row.msg_id,
        );
      }
    });
  } else {
    node.store.outbox.retryLater(row.id, detail, now + backoffMs(row.attempts));
  }
}

/** Hears each row's result, and the name of the transport that carried it (or `none`). */
export type FlushReport = (row: OutboxRow, result: RowResult, via: string) => void;

/** Delivers one peer's batch on one transport and moves each row on its own result. */
async function deliverBatch(node: HostNode, peer: PeerRow, transport: Transport, batch: OutboxRow[], report?: FlushReport): Promise<void> {
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
    report?.(row, result, transport.name);
  }
}

/**
 * One pass over the due rows: each peer's rows go to the transport chosen for them, the transports
 * side by side, and every row moves on its own result; `report` hears each. Returns how many rows
 * were offered. Without `lanes` it waits for every delivery; with them it starts each (peer,
 * transport) delivery in its lane and returns: rows already in flight, or whose lane is busy, wait
 * for a later pass.
 */
export async function flushOutbox(node: HostNode, choose: Transport | TransportChooser, report?: FlushReport, lanes?: DeliveryLanes): Promise<number> {
  const pick: TransportChooser = typeof choose === 'function' ? choose : () => choose;
  expireOverdue(node);
  const due = node.store.outbox.due(node.nowMs(), FLUSH_ROWS_MAX).filter((row) => lanes?.carries(row.id) !== true);
  const byPeer = new Map<string, OutboxRow[]>();
  for (const row of due) {
    const list = byPeer.get(row.peer_host);
    if (list === undefined) byPeer.set(row.peer_host, [row]);
    else list.push(row);
  }
  let offered = 0;
  const deliveries: Array<Promise<void>> = [];
  for (const [host, rows] of byPeer) {
    const peer = node.store.peers.get(host);
    if (peer === undefined) {
      for (const row of rows) applyResult(node, null, row, { rowId: row.id, outcome: 'rejected', detail: `host ${host} is no longer paired` });
      offered += rows.length;
      continue;
    }
    rows.sort(inSendingOrder);
    const byTransport = new Map<Transport, OutboxRow[]>();
    for (const row of rows) {
      const transport = pick(peer, row);
      const list = byTransport.get(transport);
      if (list === undefined) byTransport.set(transport, [row]);
      else list.push(row);
    }
    const groups = [...byTransport];
    // With a row due that goes first (a rotation record), the transports go one after the other,
    // its own first; otherwise side by side.
    const steps = rows.some((r) => goesFirst(r.kind)) ? [groups] : groups.map((group) => [group]);
    for (const step of steps) {
      const work = async (): Promise<void> => {
        for (const [transport, batch] of step) await deliverBatch(node, peer, transport, batch, report);
      };
      const ids = step.flatMap(([, batch]) => batch.map((r) => r.id));
      if (lanes === undefined) deliveries.push(work());
      else if (!lanes.start(`${host}\n${step[0]?.[0].name ?? ''}`, ids, work)) continue;
      offered += ids.length;
    }
  }
  await Promise.all(deliveries);
  return offered;
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
    relay:
      relay === undefined
        ? null
        : {
            url: relay.url,
            state: relay.state,
            detail: relay.detail,
            fingerprint: fingerprint(relay.relay_pubkey),
            rows: node.store.outbox.relayCountsByState(),
          },
  };
}
