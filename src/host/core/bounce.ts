// Bounces (the sender is told why): relayed mail this host refuses for a reason its sender can act on
// (no such recipient here, a body it cannot open) goes back to the sending agent as an `alert` from
// this host's `mbx` system sender, with `refs` naming the refused message, which any AgentMBX host
// shows as mail. Refusals only an attacker causes (bad signature, unpaired sender) are never bounced.
// As sender, a bounce from the peer's `mbx` ends our row for that host `rejected`.
import { sha256Hex } from '../../protocol/hash.ts';
import { checkEnvelopeShape, parseAddress } from '../../protocol/records/envelope.ts';
import { parseJsonWire } from '../../protocol/validate.ts';
import { derivedUlid, ulidTimeMs } from '../../protocol/ulid.ts';
import { localAddress, type HostNode } from './node.ts';
import { RouteError, SYSTEM_SENDER } from './route.ts';
import { queueOutgoing } from '../send.ts';
import type { MessageRow } from '../store/mail-tables.ts';

/**
 * Refusal reasons (receive's `rejected:<reason>`) a sender can act on. "no recipient on this host" is
 * not one: only a copy meant for another host (a relay's misrouting) is refused that way.
 */
const BOUNCED_REASONS = [/^unknown recipient /, /^cannot open the sealed body$/];

/**
 * Bounces queued to one peer in the last hour at most: a paired host that invents mail to unknown
 * agents gets no more than this (its sender's own deadline still tells it about the rest).
 */
export const BOUNCES_PER_PEER_PER_HOUR = 100;
const HOUR_MS = 60 * 60 * 1000;

/** Longest reason a bounce's sender keeps on its outbox row. */
export const BOUNCE_REASON_MAX_CHARS = 300;
/**
 * The bounce's second ref names the refused copy by the SHA-256 of its wire: the sender ends only the
 * row that sent those very bytes, so a copy a relay misrouted to this host ends nobody's row.
 */
const WIRE_REF_PREFIX = 'wire-sha256:';

export function isBouncedReason(reason: string): boolean {
  return BOUNCED_REASONS.some((re) => re.test(reason));
}

/**
 * Queues the bounce of the envelope in `wire` (already verified as from `peerHost` by receive, which
 * refused it for `reason`). Its id is derived from the refused id, so a refusal seen again (a re-pull
 * after an epoch change) bounces once. Returns false when there is nothing to bounce or no way to
 * seal it. Call inside the transaction that quarantines the item.
 */
export function queueBounce(node: HostNode, wire: Buffer, peerHost: string, reason: string): boolean {
  node.store.assertTransaction('queueing a bounce');
  const shape = checkEnvelopeShape(parseJsonWire(wire));
  if (!shape.ok || !isBouncedReason(reason)) return false;
  const env = shape.envelope;
  const sender = parseAddress(env.from);
  // A bounce is never bounced: two hosts could otherwise refuse each other's alerts for ever.
  if (sender?.kind !== 'agent' || sender.host !== peerHost || sender.name === SYSTEM_SENDER) return false;
  const id = derivedUlid(ulidTimeMs(env.id) ?? node.nowMs(), `bounce:${env.id}:${node.config.host}`);
  if (node.store.mail.message(id) !== undefined) return false;
  const since = node.nowMs() - HOUR_MS;
  if (node.store.outbox.countSentBy(localAddress(node, SYSTEM_SENDER), peerHost, since) >= BOUNCES_PER_PEER_PER_HOUR) return false;
  const subject = `Undeliverable: ${env.subject}`.slice(0, 200);
  const body =
    `${node.config.host} refused message ${env.id} ("${env.subject}"): ${reason}.\n` +
    `It was not delivered here and will not be retried. Check the address (agentmbx agents on ${node.config.host} lists its agents).\n`;
  try {
    queueOutgoing(
      node,
      {
        id,
        from: localAddress(node, SYSTEM_SENDER),
        to: [env.from],
        thread: env.thread,
        reply_to: env.id,
        kind: 'alert',
        subject,
        body,
        refs: [env.id, WIRE_REF_PREFIX + sha256Hex(wire)],
      },
      [],
      [peerHost],
    );
  } catch (err) {
    // No enc key for the peer (or a relay too small for a few hundred bytes): the sender's own deadline tells it.
    if (err instanceof RouteError) return false;
    throw err;
  }
  return true;
}

/**
 * A message just received: when it is a bounce from the peer's `mbx` naming mail we sent to that
 * host, by the id and the hash of the very bytes we sent there, that row ends `rejected` (the bounce
 * itself is the sender's alert). Returns how many rows it ended. Call inside the transaction that
 * stores the message.
 */
export function applyBounce(node: HostNode, msg: MessageRow, refs: readonly string[]): number {
  node.store.assertTransaction('applying a bounce');
  if (msg.kind !== 'alert' || msg.from_addr !== `${SYSTEM_SENDER}@${msg.sender_host}`) return 0;
  const [refused, wireRef] = refs;
  if (refused === undefined || wireRef?.startsWith(WIRE_REF_PREFIX) !== true) return 0;
  const firstLine = msg.body.split('\n', 1)[0] ?? '';
  const reason = `bounced by ${msg.sender_host}: ${firstLine}`.slice(0, BOUNCE_REASON_MAX_CHARS);
  let ended = 0;
  for (const row of node.store.outbox.forMessage(refused)) {
    if (row.peer_host !== msg.sender_host || WIRE_REF_PREFIX + sha256Hex(Buffer.from(row.wire, 'utf8')) !== wireRef) continue;
    if (node.store.outbox.end(row.id, 'bounce', node.nowMs(), { error: reason })) ended++;
  }
  return ended;
}
