// Receiving from the relay (design §4): pull pages from received_through, apply items in seq order
// (envelope → receive, receipt → acceptReceipt, expired → the expiry notice), quarantine what we
// refuse, store received_through in the same transaction as the last item's effect, and ack only
// after that commit. A new epoch or a rewind starts the position over.
import { fromBase64 } from '../../../protocol/base64.ts';
import { isPlainObject, isPositiveSafeInteger } from '../../../protocol/records/validate.ts';
import { failPoint } from '../../../failpoint.ts';
import type { HostNode } from '../../node.ts';
import { queueBounce } from '../../bounce.ts';
import { applyInboundItem } from '../../inbound-items.ts';
import { applyExpiredNotice } from './relay-deadlines.ts';
import { forgetSession, noteIfUnreachable, noteRelayReset, type RelaySession } from './relay-session.ts';

/** Items per pull page we ask for (the relay clamps to its max_pull). */
export const RELAY_PULL_LIMIT = 500;
/** Pages one pass pulls at most (the rest wait for the next tick). */
export const RELAY_PAGES_PER_PASS = 20;
/** Position resets (new epoch, rewind) one pass follows before giving up until the next tick. */
export const RESETS_PER_PASS = 2;

export interface PulledItem {
  seq: number;
  kind: string;
  item_id: string;
  sender_pubkey: string;
  wire_b64: string;
}

export interface PullReport {
  item: PulledItem;
  result: string;
}

/** The last ack the relay took in this process (an ack is repeated whenever the position moved past it). */
export interface LastAck {
  epoch: string | null;
  through: number | null;
}

export interface PullOutcome {
  applied: number;
  /** the through value the relay acknowledged last (null: no ack this pass) */
  acked: number | null;
  error: string | null;
}

function isItem(x: unknown): x is PulledItem {
  return isPlainObject(x) && isPositiveSafeInteger(x.seq) && typeof x.kind === 'string' && typeof x.item_id === 'string'
    && typeof x.sender_pubkey === 'string' && typeof x.wire_b64 === 'string';
}

/** What one item does to this host; anything rejected goes to quarantine. */
function applyItem(node: HostNode, relayPubkey: string, item: PulledItem): string {
  const wire = fromBase64(item.wire_b64);
  if (wire === null) return 'rejected:bad wire';
  if (item.kind === 'expired') return applyExpiredNotice(node, relayPubkey, item.sender_pubkey, wire);
  return applyInboundItem(node, item.kind, item.sender_pubkey, wire);
}

/** Tells the sender of a relayed envelope refused for a reason it can act on (bounce.ts). */
function bounceRefused(node: HostNode, item: PulledItem, reason: string): void {
  const peer = node.store.peers.byKey(item.sender_pubkey);
  const wire = fromBase64(item.wire_b64);
  if (item.kind !== 'envelope' || peer === undefined || wire === null) return;
  queueBounce(node, wire, peer.host, reason);
}

export interface PageSource {
  url: string;
  epoch: string;
  relayPubkey: string;
}

/**
 * Applies one pulled page after position `from`, in seq order (a repeated or older item is
 * skipped); each item's effect commits on its own and the position rides with the last one.
 */
export function applyPulledItems(node: HostNode, source: PageSource, from: number, page: readonly unknown[], report?: (r: PullReport) => void): { through: number; applied: number; error: string | null } {
  const { store } = node;
  const { url, epoch, relayPubkey } = source;
  const items = page.filter(isItem).filter((i) => i.seq > from).sort((a, b) => a.seq - b.seq);
  const unique = items.filter((item, i) => i === 0 || items[i - 1]?.seq !== item.seq);
  let through = from;
  let applied = 0;
  for (const [i, item] of unique.entries()) {
    const last = i === unique.length - 1;
    let result: string;
    try {
      result = store.transaction(() => {
        const outcome = applyItem(node, relayPubkey, item);
        if (outcome.startsWith('rejected:')) {
          bounceRefused(node, item, outcome.slice('rejected:'.length));
          store.relay.quarantine({
            relay_url: url, epoch, seq: item.seq, kind: item.kind, item_id: item.item_id, sender_pubkey: item.sender_pubkey,
            reason: outcome.slice('rejected:'.length), wire_b64: item.wire_b64, at: node.nowMs(),
          });
        }
        // The checkpoint rides with the last item of the run: one commit for its effect and the position.
        if (last) store.relay.setReceivedThrough(url, epoch, item.seq, node.nowMs());
        return outcome;
      });
    } catch (err) {
      // Not done (a store failure, say): the run ends before this item, which is pulled again.
      if (through > from) store.relay.setReceivedThrough(url, epoch, through, node.nowMs());
      return { through, applied, error: `cannot apply relay item ${item.seq}: ${err instanceof Error ? err.message : String(err)}` };
    }
    through = item.seq;
    applied++;
    report?.({ item, result });
    if (!last) failPoint('host.relay.after-effect');
  }
  return { through, applied, error: null };
}

/**
 * Pulls and applies everything waiting (up to RELAY_PAGES_PER_PASS pages), acking after each
 * committed page. `report` hears every item's result.
 */
export async function pullRelay(node: HostNode, session: RelaySession, report?: (r: PullReport) => void, lastAcked?: LastAck): Promise<PullOutcome> {
  const { store } = node;
  const { api } = session;
  const url = session.relay.url;
  const relayPubkey = session.relay.relay_pubkey;
  let applied = 0;
  let acked: number | null = null;
  let resets = 0;
  const reset = (epoch: string, why: 'epoch' | 'rewind'): boolean => {
    noteRelayReset(node, epoch, why);
    return ++resets <= RESETS_PER_PASS;
  };
  for (let page = 0; page < RELAY_PAGES_PER_PASS; page++) {
    const epoch = store.relay.get()?.epoch;
    if (epoch == null) return { applied, acked, error: 'no relay epoch known yet' };
    const from = store.relay.receivedThrough(url, epoch);
    let answer;
    try {
      answer = await api.pull(from, session.relay.max_pull ?? RELAY_PULL_LIMIT, epoch);
    } catch (err) {
      noteIfUnreachable(node, err);
      return { applied, acked, error: `relay pull got no answer: ${err instanceof Error ? err.message : String(err)}` };
    }
    const body = answer.body;
    if (answer.status === 409 && isPlainObject(body) && typeof body.epoch === 'string' && body.epoch !== '') {
      if (!reset(body.epoch, 'epoch')) break;
      continue;
    }
    forgetSession(node, answer);
    if (answer.status !== 200 || !isPlainObject(body) || typeof body.epoch !== 'string' || !Array.isArray(body.items) || typeof body.head_seq !== 'number') {
      return { applied, acked, error: `relay pull answered HTTP ${answer.status}` };
    }
    if (body.epoch !== epoch) {
      if (!reset(body.epoch, 'epoch')) break;
      continue;
    }
    // The store went back in time without a new epoch (a restore that kept it): start over.
    if (body.head_seq < from) {
      if (!reset(epoch, 'rewind')) break;
      continue;
    }
    const run = applyPulledItems(node, { url, epoch, relayPubkey }, from, body.items as unknown[], report);
    applied += run.applied;
    const through = run.through;
    if (run.error !== null) return { applied, acked, error: run.error };
    if (through > from) failPoint('host.relay.after-checkpoint');
    // Ack what is committed, also when an earlier ack was lost (the next one covers it).
    const ackThrough = store.relay.receivedThrough(url, epoch);
    if (ackThrough > 0 && (ackThrough !== lastAcked?.through || epoch !== lastAcked.epoch)) {
      let ack;
      try {
        ack = await api.ack(ackThrough, epoch);
      } catch (err) {
        noteIfUnreachable(node, err);
        return { applied, acked, error: `relay ack got no answer: ${err instanceof Error ? err.message : String(err)}` };
      }
      failPoint('host.relay.after-ack');
      const ackBody = ack.body;
      if (ack.status === 200) {
        acked = ackThrough;
        if (lastAcked !== undefined) {
          lastAcked.through = ackThrough;
          lastAcked.epoch = epoch;
        }
      } else if (ack.status === 409 && isPlainObject(ackBody) && typeof ackBody.epoch === 'string' && ackBody.epoch !== '') {
        if (!reset(ackBody.epoch, 'epoch')) break;
        continue;
      } else if (ack.status === 400 && isPlainObject(ackBody) && ackBody.code === 'BAD_ACK') {
        if (!reset(epoch, 'rewind')) break;
        continue;
      } else {
        forgetSession(node, ack);
        return { applied, acked, error: `relay ack answered HTTP ${ack.status}` };
      }
    }
    if (body.more !== true) break;
  }
  return { applied, acked, error: null };
}
