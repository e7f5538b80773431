// Alerts to a local agent from the host itself (`mbx`): undelivered or rejected mail.
import { splitQualifiedAddress } from '../../protocol/records/envelope.ts';
import { newUlid } from '../../protocol/ulid.ts';
import { isOwnDirectoryMail } from '../directory/wire.ts';
import { isoTime, localAddress, type HostNode } from './node.ts';
import { isMailboxHere, OWNER, SYSTEM_SENDER } from './route.ts';

/** Who to alert about mail this host sent (message `msgId`): its local sender, and its subject; null for any other message. */
export function senderOf(node: HostNode, msgId: string | null): { agent: string; subject: string } | null {
  const msg = msgId === null ? undefined : node.store.mail.message(msgId);
  // Directory mail (directory/mail.ts) is the host's own business: its fate alerts nobody.
  const from = msg?.direction === 'out' && !isOwnDirectoryMail(msg) ? splitQualifiedAddress(msg.from_addr) : null;
  return msg === undefined || from === null ? null : { agent: from.name, subject: msg.subject };
}

/** Puts an alert in a local mailbox (the owner's when `agent` is not a mailbox here any more). */
export function alertLocal(node: HostNode, agent: string, subject: string, body: string, about: string | null): void {
  const now = node.nowMs();
  const to = isMailboxHere(node, agent) ? agent : OWNER;
  const id = newUlid(now);
  node.store.transaction(() => {
    node.store.mail.insertMessage({
      id,
      direction: 'out',
      from_addr: localAddress(node, SYSTEM_SENDER),
      sender_host: node.config.host,
      to_json: JSON.stringify([localAddress(node, to)]),
      thread: about ?? id,
      reply_to: about,
      kind: 'alert',
      subject: subject.slice(0, 200),
      body,
      ts: isoTime(now),
      wire: null,
      meta_json: null,
      created_at: now,
      needs_reply: 0,
      refs_json: '[]',
    });
    node.store.mail.insertDelivery(id, to, now);
  });
}
