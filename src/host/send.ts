// Sending: route, build one v3 envelope, seal and sign one copy per destination host, and commit
// the message, the local deliveries and the outbox rows in one transaction. No enc key, no send.
import { randomBytes } from 'node:crypto';
import { sealEnvelopeBody } from '../protocol/seal.ts';
import { deriveMeta } from '../protocol/records/envelope-meta.ts';
import {
  checkEnvelopeShape,
  codePoints,
  ENVELOPE_KINDS,
  MAX_BODY_BYTES,
  MAX_SUBJECT_CHARS,
  signEnvelope,
  type EnvelopeKind,
  type UnsignedEnvelopeV3,
} from '../protocol/records/envelope.ts';
import { hasControlCharacters } from '../protocol/validate.ts';
import { isUlid, newUlid } from '../protocol/ulid.ts';
import { firstLoneSurrogateIndex } from '../common/unicode-text.ts';
import { isoTime, localAddress, type HostNode } from './core/node.ts';
import { expandRoute, isMailboxHere, RouteError } from './core/route.ts';
import { relayFit } from './transport/row-path.ts';
import { envelopeRow } from './store/mail-tables.ts';

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
  /** hosts whose LAN was probed just now and did not answer (lan-probe.ts), for the size check's sentence */
  lanProbedDown?: ReadonlySet<string>;
}

export interface SendResult {
  id: string;
  localAgents: string[];
  remoteHosts: string[];
}

export function isEnvelopeKind(kind: string): kind is EnvelopeKind {
  return (ENVELOPE_KINDS as readonly string[]).includes(kind);
}

/** What an outgoing envelope says, before it is sealed per host. */
export type OutgoingFields = Pick<UnsignedEnvelopeV3, 'id' | 'from' | 'to' | 'thread' | 'reply_to' | 'kind' | 'subject' | 'body' | 'refs'> & {
  needs_reply?: boolean;
};

/**
 * Checks, seals per host and commits one outgoing envelope: the message, its local deliveries and one
 * outbox row per remote host, in one transaction. Throws RouteError (nothing stored) when the shape or
 * the pinned relay's size limit refuses it, or a host has no enc key yet.
 */
export function queueOutgoing(
  node: HostNode,
  fields: OutgoingFields,
  localAgents: readonly string[],
  remoteHosts: readonly string[],
  random: (n: number) => Uint8Array = randomBytes,
  lanProbedDown?: ReadonlySet<string>,
): void {
  const { store } = node;
  const peers = remoteHosts.map((host) => {
    const peer = store.peers.get(host);
    if (peer?.enc_pub == null) throw new RouteError(`no enc key for host "${host}" yet: mail to it cannot be sealed (agentmbx doctor)`);
    return { host, encPub: peer.enc_pub };
  });
  const now = node.nowMs();
  const plain: UnsignedEnvelopeV3 = {
    v: 3,
    ...fields,
    ts: isoTime(now),
    needs_reply: fields.needs_reply ?? fields.kind === 'request',
    meta: deriveMeta(fields.body),
    authority: null,
    enc: null,
  };
  // The shape limits apply to what we write, before anything is stored or sealed.
  const shape = checkEnvelopeShape(signEnvelope(plain, node.config.host, node.keys.hostKey));
  if (!shape.ok) throw new RouteError(`cannot send: ${shape.reason}`);
  const copies = peers.map(({ host, encPub }) => ({
    host,
    wire: JSON.stringify(signEnvelope(sealEnvelopeBody(plain, encPub, random), node.config.host, node.keys.hostKey)),
  }));
  const fit = relayFit(node, copies, Buffer.byteLength(plain.body, 'utf8'), lanProbedDown);
  if (!fit.ok) throw new RouteError(`cannot send: ${fit.problem}`);
  store.transaction(() => {
    store.mail.insertMessage(envelopeRow(plain, 'out', node.config.host, plain.body, null, now));
    for (const agent of localAgents) store.mail.insertDelivery(plain.id, agent, now);
    for (const copy of copies) {
      store.outbox.enqueue(
        {
          kind: 'envelope',
          item_id: plain.id,
          msg_id: plain.id,
          peer_host: copy.host,
          wire: copy.wire,
          relay_refused: fit.lanOnly.get(copy.host) ?? null,
        },
        now,
      );
    }
  });
}

export function sendMail(node: HostNode, req: SendRequest): SendResult {
  const { store } = node;
  if (!isMailboxHere(node, req.from)) {
    throw new RouteError(`no agent "${req.from}" on this host (agentmbx agents add ${req.from})`, 'not-found');
  }
  const kind = req.kind ?? 'message';
  if (!isEnvelopeKind(kind)) throw new RouteError(`bad kind "${kind}": one of ${ENVELOPE_KINDS.join(', ')}`, 'invalid');
  checkSubject(req.subject);
  checkBody(req.body);
  checkBodySize(req.body);
  const replyTo = req.replyTo ?? null;
  if (replyTo !== null && !isUlid(replyTo)) throw new RouteError(`bad reply-to "${replyTo}": a message id (26 characters, as inbox shows)`, 'invalid');
  const answered = replyTo === null ? undefined : store.mail.message(replyTo);
  if (replyTo !== null && answered === undefined) throw new RouteError(`no message ${replyTo} on this host to reply to`, 'not-found');
  const route = expandRoute(node, req.from, req.to);
  const random = req.random ?? randomBytes;
  const id = newUlid(node.nowMs(), random);
  const thread = answered?.thread ?? id;
  queueOutgoing(
    node,
    {
      id,
      from: localAddress(node, req.from),
      to: route.to,
      thread,
      reply_to: replyTo,
      kind,
      subject: req.subject,
      body: req.body,
      refs: [...(req.refs ?? [])],
      ...(req.needsReply === undefined ? {} : { needs_reply: req.needsReply }),
    },
    route.localAgents,
    route.remoteHosts,
    random,
    req.lanProbedDown,
  );
  return { id, localAgents: route.localAgents, remoteHosts: route.remoteHosts };
}

/** A body is Unicode text: a lone surrogate (a JS string that is not text) is refused, never replaced. */
function checkBody(body: string): void {
  const at = firstLoneSurrogateIndex(body);
  if (at !== null) {
    const unit = body.charCodeAt(at).toString(16).toUpperCase();
    throw new RouteError(`the body is not Unicode text: a lone surrogate U+${unit} at character ${at}; send text, or a file as base64`, 'invalid');
  }
}

/** The envelope's body limit, named with its unit and a way round it. */
function checkBodySize(body: string): void {
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > MAX_BODY_BYTES) {
    throw new RouteError(
      `the body is ${bytes} bytes of UTF-8, over the ${MAX_BODY_BYTES}-byte limit: send it in parts, or put it in a file and send its path in refs`,
      'invalid',
    );
  }
}

/** What the wire allows, and not blank: a subject is how a reader tells mail apart. */
function checkSubject(subject: string): void {
  const rule = `a subject is 1 to ${MAX_SUBJECT_CHARS} characters (Unicode code points), not blank, without control characters`;
  if (subject.trim() === '') throw new RouteError(`the subject is empty: ${rule}`, 'invalid');
  const chars = codePoints(subject);
  if (chars > MAX_SUBJECT_CHARS) throw new RouteError(`the subject is ${chars} characters: ${rule}`, 'invalid');
  if (hasControlCharacters(subject)) throw new RouteError(`the subject has control characters: ${rule}`, 'invalid');
}
