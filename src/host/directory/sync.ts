// The daemon's side of the directory over the LAN (protocol §5): about once a minute (jittered),
// and at once for a peer just paired, each peer is asked for its directory (GET /v1/agents) in its
// LAN lane, and every few minutes for its status, whose `features` say whether it applies
// directory mail (mail.ts). A peer that answers 404 (an older host) is simply not listed;
// a failed call changes nothing (the peer's delivery state is the deliveries' business).
import { isPlainObject } from '../../protocol/validate.ts';
import { directoryDigest, readDirectory } from './directory.ts';
import { readFeatures } from './peer-features.ts';
import type { HostNode } from '../core/node.ts';
import type { PeerRow } from '../store/peers-table.ts';
import { lanCall, LanError } from '../transport/lan/client.ts';
import { peerLanUnreachable } from '../transport/row-path.ts';

/** How often each peer's directory is asked for. */
export const DIRECTORY_EVERY_MS = 60_000;
/** Up to this much is added to each wait, at random, so that peers are not all asked in one tick. */
export const DIRECTORY_JITTER_MS = 10_000;
/** How often a peer's status (its features) is read again. */
export const STATUS_EVERY_MS = 10 * 60_000;
/**
 * Reads the peer's public status at its pinned address and keeps its features, when the answer
 * names the pinned key (anything else is not this peer). Returns whether it did.
 */
export async function learnPeerStatus(node: HostNode, peer: PeerRow): Promise<boolean> {
  const answer = await lanCall(peer.addr, 'GET', '/v1/status', undefined, null);
  if (answer.status !== 200 || !isPlainObject(answer.body) || answer.body.host_pubkey !== peer.host_pubkey) return false;
  node.store.peerLinks.setFeatures(peer.host, readFeatures(answer.body.features), node.nowMs());
  return true;
}

export type DirectoryFetch = 'changed' | 'same' | 'unsupported' | 'refused';

/** Asks the peer for its directory and keeps it; 404 (an older host) is 'unsupported'. */
export async function fetchPeerDirectory(node: HostNode, peer: PeerRow): Promise<DirectoryFetch> {
  const answer = await lanCall(peer.addr, 'GET', '/v1/agents', undefined, node);
  if (answer.status === 404) return 'unsupported';
  const agents = answer.status === 200 ? readDirectory(answer.body, peer.host) : null;
  if (agents === null) return 'refused';
  const before = directoryDigest(node.store.peerLinks.peerAgentsOf(peer.host));
  node.store.peerLinks.replaceAgents(peer.host, agents, node.nowMs());
  return directoryDigest(agents) === before ? 'same' : 'changed';
}

/** Starts LAN work for a peer in its lane; false when the lane is busy (the work is tried next tick). */
export type StartInLane = (peer: PeerRow, work: () => Promise<void>) => boolean;

export class DirectorySync {
  readonly #node: HostNode;
  readonly #log: (line: string) => void;
  readonly #random: () => number;
  /** when each peer is due next (bounded by the peers table; a peer not in it is due at once) */
  readonly #due = new Map<string, number>();

  constructor(node: HostNode, log: (line: string) => void, random: () => number = Math.random) {
    this.#node = node;
    this.#log = log;
    this.#random = random;
  }

  /** Starts the directory calls of every peer that is due, each in its LAN lane. */
  start(startInLane: StartInLane): void {
    const now = this.#node.nowMs();
    const peers = this.#node.store.peers.list();
    for (const peer of peers) {
      // A peer whose LAN path is known dead, or whose last delivery attempt never ended, is left to the deliveries.
      if (now < (this.#due.get(peer.host) ?? 0) || peer.lan_attempt_at !== null || peerLanUnreachable(peer, now)) continue;
      if (startInLane(peer, () => this.#sync(peer))) this.#due.set(peer.host, now + DIRECTORY_EVERY_MS + Math.floor(this.#random() * DIRECTORY_JITTER_MS));
    }
    const hosts = new Set(peers.map((p) => p.host));
    const gone = [...this.#due.keys()].filter((host) => !hosts.has(host));
    for (const host of gone) this.#due.delete(host);
    // An unpaired host's directory, features and whereabouts go with it.
    if (gone.length > 0) this.#node.store.peerLinks.prune();
  }

  async #sync(peer: PeerRow): Promise<void> {
    const node = this.#node;
    try {
      const statusAt = node.store.peerLinks.get(peer.host)?.status_at ?? null;
      if (statusAt === null || node.nowMs() - statusAt >= STATUS_EVERY_MS) await learnPeerStatus(node, peer);
      const fetched = await fetchPeerDirectory(node, peer);
      if (fetched === 'changed') this.#log(`directory of ${peer.host}: ${node.store.peerLinks.peerAgentsOf(peer.host).length} agents`);
    } catch (err) {
      // No answer: the peer is asked again when next due (its deliveries note the path's state).
      if (!(err instanceof LanError)) throw err;
    }
  }
}
