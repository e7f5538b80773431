// Before a send whose sealed copy may be too large for the pinned relay, a peer not known up on the
// LAN is asked once (GET /v1/status, bounded) whether it answers now: the size check then says what
// is true (it goes over the LAN only, or "not reachable now (probed)"), not what an old failure said.
import { isPlainObject } from '../protocol/validate.ts';
import type { HostNode } from './core/node.ts';
import { expandRoute } from './core/route.ts';
import type { SendRequest } from './send.ts';
import type { PeerRow } from './store/peers-table.ts';
import { lanCall } from './transport/lan/client.ts';
import { DEFAULT_MAX_ITEM_BYTES, lanKnownUp, sealedSizeBound } from './transport/row-path.ts';

/** The longest the probe of one peer takes (connect and answer); peers are probed side by side. */
export const SEND_PROBE_TIMEOUT_MS = 2_500;

/**
 * `req` with the hosts that were probed and did not answer (`lanProbedDown`). A peer that answers as
 * itself is recorded reachable, so the size check lets its copy go over the LAN only.
 */
export async function withLanProbe(node: HostNode, req: SendRequest): Promise<SendRequest> {
  const relay = node.store.relay.get();
  if (relay === undefined || sealedSizeBound(Buffer.byteLength(req.body, 'utf8')) <= (relay.max_item_bytes ?? DEFAULT_MAX_ITEM_BYTES)) return req;
  let hosts: string[];
  try {
    hosts = expandRoute(node, req.from, req.to).remoteHosts;
  } catch {
    return req; // sendMail refuses the route with its own sentence
  }
  const unseen = hosts.map((host) => node.store.peers.get(host)).filter((peer): peer is PeerRow => peer !== undefined && !lanKnownUp(peer));
  const answered = await Promise.all(
    unseen.map(async (peer) => {
      try {
        const answer = await lanCall(peer.addr, 'GET', '/v1/status', undefined, null, SEND_PROBE_TIMEOUT_MS);
        return answer.status === 200 && isPlainObject(answer.body) && answer.body.host_pubkey === peer.host_pubkey;
      } catch {
        return false;
      }
    }),
  );
  const down = new Set<string>();
  unseen.forEach((peer, i) => {
    if (answered[i] === true) {
      node.store.peers.noteReachable(peer.host, node.nowMs());
      node.store.outbox.makeDueNow(peer.host, node.nowMs());
    } else down.add(peer.host);
  });
  return { ...req, lanProbedDown: down };
}
