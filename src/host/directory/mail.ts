// Directory mail (wire.ts holds its shape): where no LAN call reaches a peer, this host's
// directory travels to it as sealed mail between the hosts' `mbx` system senders, through whichever
// path the outbox takes (the relay, in practice). Sent only to peers whose status or own directory
// mail named DIRECTORY_MAIL_FEATURE, only after the LAN has not carried our directory to the peer for
// DIRECTORY_MAIL_AFTER_MS, then when our directory changes (at most once a minute) and once an hour
// unchanged. The receiver applies it (the highest seq wins), answers with a delivery receipt from its
// `mbx` so that the sender's row settles, and shows it in no inbox.
import { newUlid } from '../../protocol/ulid.ts';
import type { EnvelopeV3 } from '../../protocol/records/envelope.ts';
import { DIRECTORY_AGENTS_MAX, directoryDigest, ownDirectory, readDirectory, type DirectoryAgent } from './directory.ts';
import { peerFeatures, readFeatures } from './peer-features.ts';
import {
  DIRECTORY_MAIL_FEATURE,
  DIRECTORY_MAIL_KIND,
  DIRECTORY_MAIL_MAX_BYTES,
  DIRECTORY_MAIL_SUBJECT,
  DIRECTORY_MAIL_TYPE,
  readDirectoryMailBody,
  type DirectoryMailBody,
} from './wire.ts';
import { localAddress, type HostNode } from '../core/node.ts';
import { queueReceipt } from '../core/receipts.ts';
import { RouteError, SYSTEM_SENDER } from '../core/route.ts';
import { queueOutgoing } from '../send.ts';
import { HOST_FEATURES } from '../transport/lan/features.ts';
import type { PeerRow } from '../store/peers-table.ts';

/** How long the LAN must not have carried our directory to a peer (nor the pairing be younger) before mail does. */
export const DIRECTORY_MAIL_AFTER_MS = 5 * 60_000;
/** An unchanged directory is mailed again this often (its last_seen times move on). */
export const DIRECTORY_MAIL_EVERY_MS = 60 * 60_000;
/** A changed directory is mailed at most this often to one peer. */
export const DIRECTORY_MAIL_GAP_MS = 60_000;

/** What receive answers for a directory mail (a ReceiveResult). */
export type DirectoryMailResult = 'accepted' | 'duplicate' | 'rejected:bad directory mail';

/** The body of our directory mail, its agents cut (last first) until it fits DIRECTORY_MAIL_MAX_BYTES. */
function mailBody(node: HostNode, seq: number): string {
  const agents: DirectoryAgent[] = ownDirectory(node).agents;
  for (;;) {
    const body: DirectoryMailBody = { type: DIRECTORY_MAIL_TYPE, v: 1, seq, host: node.config.host, features: [...HOST_FEATURES], agents };
    const text = JSON.stringify(body);
    if (Buffer.byteLength(text, 'utf8') <= DIRECTORY_MAIL_MAX_BYTES || agents.length === 0) return text;
    agents.splice(Math.max(0, Math.floor(agents.length * 0.9)));
  }
}

/** Whether our directory is due as mail to `peer` now (see the file's comment); `digest` is our directory's now. */
function mailDue(node: HostNode, peer: PeerRow, digest: string): boolean {
  const now = node.nowMs();
  if (peer.enc_pub === null || now - peer.paired_at < DIRECTORY_MAIL_AFTER_MS) return false;
  if (!peerFeatures(node, peer.host).includes(DIRECTORY_MAIL_FEATURE)) return false;
  const link = node.store.peerLinks.get(peer.host);
  if (link?.served_at != null && now - link.served_at < DIRECTORY_MAIL_AFTER_MS) return false;
  if (link?.mail_at == null) return true;
  const since = now - link.mail_at;
  return since >= DIRECTORY_MAIL_EVERY_MS || (link.mail_digest !== digest && since >= DIRECTORY_MAIL_GAP_MS);
}

/**
 * Queues our directory as mail to every peer it is due for; returns the hosts. A peer we cannot
 * seal for (no enc key) or a relay too small is skipped until the next call.
 */
export function queueDirectoryMail(node: HostNode): string[] {
  const digest = directoryDigest(node.store.peerLinks.ownAgents(DIRECTORY_AGENTS_MAX));
  const sent: string[] = [];
  for (const peer of node.store.peers.list()) {
    if (!mailDue(node, peer, digest)) continue;
    const now = node.nowMs();
    const seq = Math.max(now, (node.store.peerLinks.get(peer.host)?.mail_at ?? 0) + 1);
    const id = newUlid(now);
    try {
      node.store.transaction(() => {
        queueOutgoing(
          node,
          {
            id,
            from: localAddress(node, SYSTEM_SENDER),
            to: [`${SYSTEM_SENDER}@${peer.host}`],
            thread: id,
            reply_to: null,
            kind: DIRECTORY_MAIL_KIND,
            subject: DIRECTORY_MAIL_SUBJECT,
            body: mailBody(node, seq),
            refs: [],
          },
          [],
          [peer.host],
        );
        node.store.peerLinks.noteMailSent(peer.host, digest, seq);
      });
      sent.push(peer.host);
    } catch (err) {
      if (!(err instanceof RouteError)) throw err;
    }
  }
  return sent;
}

/**
 * A directory mail from `peer` (core/receive.ts checked its signature and opened `body`): applied when
 * its seq is above the last one's, answered with a delivery receipt from our `mbx` either way, and
 * stored in no mailbox. Also tells us the peer applies directory mail.
 */
export function applyDirectoryMail(node: HostNode, peer: PeerRow, env: EnvelopeV3, body: string, via: { transport: string }): DirectoryMailResult {
  const { store } = node;
  const mail = readDirectoryMailBody(body, peer.host);
  const agents = mail === null ? null : readDirectory({ host: mail.host, agents: mail.agents }, peer.host);
  if (mail === null || agents === null) return 'rejected:bad directory mail';
  const now = node.nowMs();
  return store.transaction((): DirectoryMailResult => {
    const newer = mail.seq > (store.peerLinks.get(peer.host)?.directory_seq ?? 0);
    if (newer) {
      store.peerLinks.replaceAgents(peer.host, agents, now, mail.seq);
      store.peerLinks.setFeatures(peer.host, readFeatures(mail.features), now);
    }
    queueReceipt(node, { id: env.id, direction: 'in', sender_host: peer.host }, SYSTEM_SENDER, 'delivered', null, 1);
    // Through the relay, a copy we hold again means our receipt did not reach the sender: it goes again.
    if (!newer && via.transport === 'relay') store.outbox.requeueLatestReceipts(env.id, now);
    return newer ? 'accepted' : 'duplicate';
  });
}
