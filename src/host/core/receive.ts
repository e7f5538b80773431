// Receiving one envelope from a peer, whatever transport carried it: shape, approved peer, signer,
// signature against the pinned (or a retired) key, opening, permanent dedup by id, then the
// message, its deliveries and their 'delivered' receipts in one transaction.
import { fingerprint } from '../../protocol/fingerprint.ts';
import { openEnvelopeBody } from '../../protocol/seal.ts';
import { checkEnvelopeShape, isSealed, splitQualifiedAddress, verifyEnvelope, type EnvelopeV3 } from '../../protocol/records/envelope.ts';
import type { HostNode } from './node.ts';
import { applyBounce } from './bounce.ts';
import { applyDirectoryMail } from '../directory/mail.ts';
import { isDirectoryMail } from '../directory/wire.ts';
import { queueReceipt } from './receipts.ts';
import { recipientsHere } from './route.ts';
import { envelopeRow } from '../store/mail-tables.ts';
import type { PeerRow } from '../store/peers-table.ts';

/** Who handed the envelope over: the transport's name and the host key it authenticated. */
export interface Via {
  transport: string;
  peerPubkey: string;
}

export type ReceiveResult = 'accepted' | 'duplicate' | `rejected:${string}`;

/** The peer key (current, then retired) that signed `env`; null when none did. */
export function envelopeSigner(node: HostNode, peer: PeerRow, env: EnvelopeV3): string | null {
  for (const key of [peer.host_pubkey, ...node.store.peers.retiredKeys(peer.host)]) {
    if (fingerprint(key) === env.sig.key && verifyEnvelope(env, key)) return key;
  }
  return null;
}

/**
 * An envelope we already hold. Through the relay that means its sender pushed it again because no
 * delivery receipt reached it (the relay lost it, say in a restore): our newest receipts go again.
 */
function duplicate(node: HostNode, id: string, via: Via): 'duplicate' {
  if (via.transport === 'relay') node.store.outbox.requeueLatestReceipts(id, node.nowMs());
  return 'duplicate';
}

export function receive(node: HostNode, envelope: unknown, via: Via, wire?: string): ReceiveResult {
  const { store } = node;
  const shape = checkEnvelopeShape(envelope);
  if (!shape.ok) return `rejected:bad envelope: ${shape.reason}`;
  const env = shape.envelope;
  const peer = store.peers.byKey(via.peerPubkey);
  if (peer === undefined) return 'rejected:sender is not a paired host';
  if (env.sig.host !== peer.host || splitQualifiedAddress(env.from)?.host !== peer.host) return 'rejected:envelope is not from the sending host';
  if (!isSealed(env)) return 'rejected:envelope body is not sealed';
  if (envelopeSigner(node, peer, env) === null) return 'rejected:bad signature';
  const body = openEnvelopeBody(env, [node.keys.enc.privateKey, ...node.keys.retiredEnc]);
  if (body === null) return 'rejected:cannot open the sealed body';
  // The peer's directory, host to host: applied, never stored as mail (directory/mail.ts).
  if (isDirectoryMail(env, peer.host, node.config.host)) return applyDirectoryMail(node, peer, env, body, via);
  if (store.mail.message(env.id) !== undefined) return duplicate(node, env.id, via);
  const recipients = recipientsHere(node, env.to);
  if (!recipients.ok) return `rejected:${recipients.reason}`;
  const now = node.nowMs();
  return store.transaction((): ReceiveResult => {
    // Checked again inside the transaction: another transport may have committed it meanwhile.
    if (store.mail.message(env.id) !== undefined) return 'duplicate';
    const row = envelopeRow(env, 'in', peer.host, body, wire ?? JSON.stringify(env), now);
    store.mail.insertMessage(row);
    for (const agent of recipients.agents) {
      store.mail.insertDelivery(env.id, agent, now);
      queueReceipt(node, row, agent, 'delivered', null, 1);
    }
    applyBounce(node, row, env.refs);
    return 'accepted';
  });
}
