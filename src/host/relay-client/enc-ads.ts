// Peers' enc keys through the relay (protocol §3.8): used only when the LAN cannot give one. We seal
// only to an ad signed by the peer's pinned key, and refuse a rolled-back v2 ad (not newer than the
// newest we accepted for that key, but naming another enc key). A relay that predates v2 ads answers
// the legacy v1 form, taken only for a peer whose enc key we do not hold yet.
import { checkEncAdV2, verifyEncAdV1 } from '../../protocol/records/enc-ad.ts';
import { readEncAdLookupAnswer } from '../../protocol/relay-api/enc-key.ts';
import type { HostNode } from '../core/node.ts';
import type { PeerRow } from '../store/peers-table.ts';
import type { RelayApi } from './api.ts';

export class RelayEncAdError extends Error {}

/** Checks an ad for `peer` and records it; returns the enc key to seal to. Throws RelayEncAdError. */
export function acceptPeerEncAd(node: HostNode, peer: PeerRow, ad: unknown, sig: unknown): string {
  const check = checkEncAdV2(ad, sig, node.nowMs());
  if (!check.ok) throw new RelayEncAdError(`the relay's enc-key ad for ${peer.host} is refused: ${check.reason}`);
  if (check.ad.host_pubkey !== peer.host_pubkey) throw new RelayEncAdError(`the relay's enc-key ad for ${peer.host} is not signed by its pinned key`);
  const newest = node.store.relay.peerEncAd(peer.host_pubkey);
  if (newest !== undefined && check.iatMs <= newest.iat_ms && check.ad.enc_pub !== newest.enc_pub) {
    throw new RelayEncAdError(`the relay's enc-key ad for ${peer.host} is older than one already seen: refused as a rollback`);
  }
  if (newest === undefined || check.iatMs > newest.iat_ms) {
    node.store.relay.putPeerEncAd({ host_pubkey: peer.host_pubkey, enc_pub: check.ad.enc_pub, iat_ms: check.iatMs, record: JSON.stringify({ ad, sig }) });
    // a new ad at the relay is the peer enrolled there: what waits for it goes now
    node.store.outbox.makeDueNow(peer.host, node.nowMs());
  }
  return check.ad.enc_pub;
}

/**
 * Checks a v1 lookup answer `{host, host_pubkey, enc_pub, sig}` for `peer`; returns the enc key to
 * seal to. Throws RelayEncAdError.
 */
export function acceptPeerEncAdV1(node: HostNode, peer: PeerRow, answer: Record<string, unknown>): string {
  // A v1 ad carries no time, so nothing tells it from a replayed older one: it may give a first key,
  // never replace one we know (from pairing, the LAN or a v2 ad).
  if (peer.enc_pub !== null || node.store.relay.peerEncAd(peer.host_pubkey) !== undefined) {
    throw new RelayEncAdError(`the relay has only a v1 enc-key ad for ${peer.host}, which cannot replace the enc key we hold`);
  }
  const { host, host_pubkey: hostPubkey, enc_pub: encPub, sig } = answer;
  if (host !== peer.host || hostPubkey !== peer.host_pubkey || !verifyEncAdV1(host, encPub, sig, peer.host_pubkey)) {
    throw new RelayEncAdError(`the relay's v1 enc-key ad for ${peer.host} is not signed by its pinned key`);
  }
  return encPub as string;
}

/** Fetches `peer`'s enc-key ad from the relay by its pinned key, checks it and pins the enc key. */
export async function fetchPeerEncKeyViaRelay(node: HostNode, api: RelayApi, peer: PeerRow): Promise<string> {
  const reply = readEncAdLookupAnswer(await api.encAd(peer.host_pubkey));
  if (!reply.ok) throw new RelayEncAdError(`the relay has no enc-key ad for ${peer.host} (${reply.error})`);
  // The peer as it is now: pairing, the LAN or a rotation may have changed it during the call.
  const current = node.store.peers.get(peer.host);
  if (current === undefined || current.host_pubkey !== peer.host_pubkey) throw new RelayEncAdError(`${peer.host} changed while its enc key was looked up`);
  const found = reply.value;
  const encPub = found.version === 1 ? acceptPeerEncAdV1(node, current, found.answer) : acceptPeerEncAd(node, current, found.ad, found.adSig);
  const sig = found.version === 1 ? found.answer['sig'] : found.adSig;
  node.store.peers.setEncKey(current.host, encPub, typeof sig === 'string' ? sig : '');
  return encPub;
}
