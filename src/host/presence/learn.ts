// What the LAN server learns of a peer's whereabouts (protocol §5): the socket address and
// x-mbx-port of its verified calls, and its presence beacons. Only noted here; the daemon's
// PresenceKeeper (keeper.ts) probes them before it moves any pin.
import type { HostNode } from '../core/node.ts';
import type { PeerRow } from '../store/peers-table.ts';
import { baseUrl, beaconCandidates, readBeacon } from './beacon.ts';

/** A call from the same new address is noted again at most this often (a store write per call otherwise). */
const CALL_NOTE_EVERY_MS = 60_000;

/** A verified call of `peer` (server side): its socket address and x-mbx-port name where it listens now. */
export function notePeerCall(node: HostNode, peer: PeerRow, remoteAddress: string | undefined, portHeader: unknown): void {
  if (typeof portHeader !== 'string' || !/^\d{1,5}$/.test(portHeader) || remoteAddress === undefined) return;
  const port = Number(portHeader);
  const addr = port >= 1 && port <= 65_535 ? baseUrl(remoteAddress, port) : null;
  if (addr === null || addr === peer.addr) return;
  const link = node.store.peerLinks.get(peer.host);
  const now = node.nowMs();
  if (link?.call_addr === addr && link.call_at !== null && now - link.call_at < CALL_NOTE_EVERY_MS) return;
  node.store.peerLinks.noteCallAddr(peer.host, addr, now);
}

/** A peer's beacon (server side): kept when its seq is the highest yet; false when the body is no beacon. */
export function acceptBeacon(node: HostNode, peer: PeerRow, body: unknown, remoteAddress: string | undefined): boolean {
  const beacon = readBeacon(body);
  if (beacon === null) return false;
  node.store.peerLinks.notePresence(peer.host, beacon.seq, beaconCandidates(beacon, remoteAddress), node.nowMs());
  return true;
}
