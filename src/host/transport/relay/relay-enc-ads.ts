// Peers' enc keys through the relay (protocol §3.8): used only when the LAN cannot give one. We seal
// only to a v2 ad signed by the peer's pinned key, and refuse a rolled-back ad (not newer than the
// newest we accepted for that key, but naming another enc key).
import { checkEncAdV2 } from '../../../protocol/records/enc-ad.ts';
import { isPlainObject } from '../../../protocol/records/validate.ts';
import type { HostNode } from '../../node.ts';
import type { PeerRow } from '../../store/peers-table.ts';
import type { RelayApi } from './relay-api.ts';

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
  }
  return check.ad.enc_pub;
}

/** Fetches `peer`'s enc-key ad from the relay by its pinned key, checks it and pins the enc key. */
export async function fetchPeerEncKeyViaRelay(node: HostNode, api: RelayApi, peer: PeerRow): Promise<string> {
  const answer = await api.encAd(peer.host_pubkey);
  const body = answer.body;
  if (answer.status !== 200 || !isPlainObject(body) || body.ad === undefined) {
    throw new RelayEncAdError(`the relay has no v2 enc-key ad for ${peer.host} (HTTP ${answer.status})`);
  }
  const encPub = acceptPeerEncAd(node, peer, body.ad, body.ad_sig);
  node.store.peers.setEncKey(peer.host, encPub, typeof body.ad_sig === 'string' ? body.ad_sig : '');
  return encPub;
}
