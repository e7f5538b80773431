// Receiving from the relay (design §4): pull pages from received_through, apply items in seq order
// (envelope → receive, receipt → acceptReceipt, expired → the expiry notice), quarantine what we
// refuse, store received_through in the same transaction as the last item's effect, and ack only
// after that commit. A new epoch or a rewind starts the position over.
import { fromBase64 } from '../../../protocol/base64.ts';
import type { RefusedReply, Reply } from '../../../protocol/relay-api/answer.ts';
import { readAckAnswer, type AckAnswer } from '../../../protocol/relay-api/ack.ts';
import { isPulledItem, readPullAnswer, refusedEpoch, type PulledItem, type PullPage } from '../../../protocol/relay-api/pull.ts';
import { failPoint } from '../../../failpoint.ts';
import type { HostNode } from '../../core/node.ts';
import { queueBounce } from '../../core/bounce.ts';
import { applyInboundItem } from '../../core/inbound-items.ts';
import { applyExpiredNotice } from './relay-deadlines.ts';
import { forgetSession, noteIfUnreachable, noteRelayReset, type RelaySession } from '../../relay-client/session.ts';

/** Items per pull page we ask for (the relay clamps to its max_pull). */
export const RELAY_PULL_LIMIT = 500;
/** Pages one pass pulls at most (the rest wait for the next tick). */
export const RELAY_PAGES_PER_PASS = 20;
/** Position resets (new epoch, rewind) one pass follows before giving up until the next tick. */
export const RESETS_PER_PASS = 2;

export type { PulledItem };

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

/** What one item does to this host; anything rejected goes to quarantine. */
function applyItem(node: HostNode, relayPubkey: string, item: PulledItem): string {
  const wire = fromBase64(item.wire_b64);
  if (wire === null) return 'rejected:bad wire';
  if (item.kind === 'expired') return applyExpiredNotice(node, relayPubkey, item.sender_pubkey, wire);
  const result = applyInboundItem(node, item.kind, item.sender_pubkey, wire);
  // the peer pushed through the relay, so it is enrolled there: what waits for it goes now
  const peer = node.store.peers.byKey(item.sender_pubkey);
  if (peer !== undefined && !result.startsWith('rejected:')) node.store.outbox.makeDueNow(peer.host, node.nowMs());
  return result;
}

/** Tells the sender of a relayed envelope refused for a reason it can act on (core/bounce.ts). */
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
export function applyPulledItems(
  node: HostNode,
  source: PageSource,
  from: number,
  page: readonly unknown[],
  report?: (r: PullReport) => void,
): { through: number; applied: number; error: string | null } {
  const { store } = node;
  const { url, epoch, relayPubkey } = source;
  const items = page
    .filter(isPulledItem)
    .filter((i) => i.seq > from)
    .sort((a, b) => a.seq - b.seq);
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
            relay_url: url,
            epoch,
            seq: item.seq,
            kind: item.kind,
            item_id: item.item_id,
            sender_pubkey: item.sender_pubkey,
            reason: outcome.slice('rejected:'.length),
            wire_b64: item.wire_b64,
            at: node.nowMs(),
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

/** A held pull (relay-link.ts): how long the relay may hold a pull that finds nothing, and what aborts it. */
export interface HeldPullOptions {
  waitS: number;
  stop: AbortSignal;
}

/** One pass of pullRelay: what it did so far, and how many position resets it followed. */
interface PullPass {
  held: HeldPullOptions | undefined;
  node: HostNode;
  session: RelaySession;
  report: ((r: PullReport) => void) | undefined;
  lastAcked: LastAck | undefined;
  applied: number;
  acked: number | null;
  resets: number;
}

/** What a page ends in: pull the next one, stop here, or stop with an error. */
type PageStep = 'next' | 'stop' | { error: string };

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Pulls and applies everything waiting (up to RELAY_PAGES_PER_PASS pages), acking after each
 * committed page. `report` hears every item's result.
 */
export async function pullRelay(
  node: HostNode,
  session: RelaySession,
  report?: (r: PullReport) => void,
  lastAcked?: LastAck,
  held?: HeldPullOptions,
): Promise<PullOutcome> {
  const pass: PullPass = { held, node, session, report, lastAcked, applied: 0, acked: null, resets: 0 };
  for (let page = 0; page < RELAY_PAGES_PER_PASS; page++) {
    const step = await pullPage(pass);
    if (step === 'stop') break;
    if (step !== 'next') return { applied: pass.applied, acked: pass.acked, error: step.error };
  }
  return { applied: pass.applied, acked: pass.acked, error: null };
}

/** The relay changed its store generation: the position starts over; a pass follows RESETS_PER_PASS of them. */
function startOver(pass: PullPass, epoch: string, why: 'epoch' | 'rewind'): PageStep {
  noteRelayReset(pass.node, epoch, why);
  return ++pass.resets <= RESETS_PER_PASS ? 'next' : 'stop';
}

/** A refusal of a pull or an ack: a new epoch starts over; anything else ends the pass. */
function refusedStep(pass: PullPass, refusal: RefusedReply, what: string): PageStep {
  const epoch = refusal.code === 'EPOCH' ? refusedEpoch(refusal.body) : null;
  if (epoch !== null) return startOver(pass, epoch, 'epoch');
  forgetSession(pass.node, refusal);
  return { error: `relay ${what} answered ${refusal.error}` };
}

/** Pulls one page after the stored position, applies it and acks it. */
async function pullPage(pass: PullPass): Promise<PageStep> {
  const { node, session } = pass;
  const { url, relay_pubkey: relayPubkey } = session.relay;
  const epoch = node.store.relay.get()?.epoch;
  if (epoch == null) return { error: 'no relay epoch known yet' };
  const from = node.store.relay.receivedThrough(url, epoch);
  let reply: Reply<PullPage>;
  try {
    reply = readPullAnswer(await session.api.pull(from, session.relay.max_pull ?? RELAY_PULL_LIMIT, epoch, pass.held?.waitS, pass.held?.stop));
  } catch (err) {
    // a held pull cut short by the daemon stopping says nothing about the relay
    if (pass.held?.stop.aborted === true) return { error: 'stopped' };
    noteIfUnreachable(node, err);
    return { error: `relay pull got no answer: ${errorText(err)}` };
  }
  if (!reply.ok) return refusedStep(pass, reply, 'pull');
  const page = reply.value;
  if (page.epoch !== epoch) return startOver(pass, page.epoch, 'epoch');
  // The store went back in time without a new epoch (a restore that kept it): start over.
  if (page.head_seq < from) return startOver(pass, epoch, 'rewind');
  const run = applyPulledItems(node, { url, epoch, relayPubkey }, from, page.items, pass.report);
  pass.applied += run.applied;
  if (run.error !== null) return { error: run.error };
  if (run.through > from) failPoint('host.relay.after-checkpoint');
  return (await ackCommitted(pass, epoch)) ?? (page.more ? 'next' : 'stop');
}

/** Acks what is committed, also when an earlier ack was lost (the next one covers it); null when the page goes on as it is. */
async function ackCommitted(pass: PullPass, epoch: string): Promise<PageStep | null> {
  const { node, session, lastAcked } = pass;
  const through = node.store.relay.receivedThrough(session.relay.url, epoch);
  if (through === 0 || (through === lastAcked?.through && epoch === lastAcked.epoch)) return null;
  let reply: Reply<AckAnswer>;
  try {
    reply = readAckAnswer(await session.api.ack(through, epoch));
  } catch (err) {
    noteIfUnreachable(node, err);
    return { error: `relay ack got no answer: ${errorText(err)}` };
  }
  failPoint('host.relay.after-ack');
  // BAD_ACK: the ack went past the relay's head, which is an epoch change in all but name
  if (!reply.ok) return reply.code === 'BAD_ACK' ? startOver(pass, epoch, 'rewind') : refusedStep(pass, reply, 'ack');
  pass.acked = through;
  if (lastAcked !== undefined) {
    lastAcked.through = through;
    lastAcked.epoch = epoch;
  }
  return null;
}
