// Sending: route, build one v3 envelope, seal and sign one copy per destination host, and commit
// the message, the local deliveries and the outbox rows in one transaction. No enc key, no send.
import { randomBytes } from 'node:crypto';
import { sealEnvelopeBody } from '../protocol/seal.ts';
import { checkEnvelopeShape, ENVELOPE_KINDS, signEnvelope, type EnvelopeKind, type UnsignedEnvelopeV3 } from '../protocol/records/envelope.ts';
import { newUlid } from '../protocol/ulid.ts';
import { isoTime, localAddress, type HostNode } from './node.ts';
import { expandRoute, OWNER, RouteError } from './route.ts';

export interface SendRequest {
  from: string;
  to: readonly string[];
  subject: string;
  body: string;
  kind?: string;
  replyTo?: string | null;
  /** default: a request needs a reply */
  needsReply?: boolean;
  refs?: readonly string[];
  /** randomness for ids and sealing (tests) */
  random?: (n: number) => Uint8Array;
}

export interface SendResult {
  id: string;
  localAgents: string[];
  remoteHosts: string[];
}

export function isEnvelopeKind(kind: string): kind is EnvelopeKind {
  return (ENVELOPE_KINDS as readonly string[]).includes(kind);
}

export function sendMail(node: HostNode, req: SendRequest): SendResult {
  const { store } = node;
  if (req.from !== OWNER && store.mail.agent(req.from) === undefined) {
    throw new RouteError(`no agent "${req.from}" on this host (agentmbx agents add ${req.from})`);
  }
  const kind = req.kind ?? 'message';
  if (!isEnvelopeKind(kind)) throw new RouteError(`bad kind "${kind}": one of ${ENVELOPE_KINDS.join(', ')}`);
  const route = expandRoute(node, req.from, req.to);
  const peers = route.remoteHosts.map((host) => {
    const peer = store.peers.get(host);
    if (peer?.enc_pub == null) throw new RouteError(`no enc key for host "${host}" yet: mail to it cannot be sealed (agentmbx doctor)`);
    return { host, encPub: peer.enc_pub };
  });
  const now = node.nowMs();
  const random = req.random ?? randomBytes;
  const id = newUlid(now, random);
  const replyTo = req.replyTo ?? null;
  const thread = (replyTo === null ? null : store.mail.message(replyTo)?.thread) ?? replyTo ?? id;
  const plain: UnsignedEnvelopeV3 = {
    v: 3, id, ts: isoTime(now), from: localAddress(node, req.from), to: route.to, thread, reply_to: replyTo,
    kind, subject: req.subject, body: req.body, needs_reply: req.needsReply ?? kind === 'request', refs: [...(req.refs ?? [])], meta: {}, authority: null, enc: null,
  };
  // The shape limits apply to what we write, before anything is stored or sealed.
  const shape = checkEnvelopeShape(signEnvelope(plain, node.config.host, node.keys.hostKey));
  if (!shape.ok) throw new RouteError(`cannot send: ${shape.reason}`);
  const copies = peers.map(({ host, encPub }) => ({
    host,
    wire: JSON.stringify(signEnvelope(sealEnvelopeBody(plain, encPub, random), node.config.host, node.keys.hostKey)),
  }));
  store.transaction(() => {
    store.mail.insertMessage({
      id, direction: 'out', from_addr: plain.from, sender_host: node.config.host, to_json: JSON.stringify(plain.to),
      thread, reply_to: replyTo, kind, subject: req.subject, body: req.body, ts: plain.ts, wire: null, created_at: now,
    });
    for (const agent of route.localAgents) store.mail.insertDelivery(id, agent, now);
    for (const copy of copies) store.outbox.enqueue({ kind: 'envelope', item_id: id, msg_id: id, peer_host: copy.host, wire: copy.wire }, now);
  });
  return { id, localAgents: route.localAgents, remoteHosts: route.remoteHosts };
}
