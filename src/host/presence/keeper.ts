// Presence and addresses (protocol §5): the daemon tells its peers where it is (a beacon at start
// and when its addresses change), learns where each peer is (its beacons, and the socket address
// and x-mbx-port of its verified calls), and moves a peer's pinned address only after
// GET /v1/status?challenge= at the new address answers signed by the pinned key. A laptop whose
// IP changed is found again without pairing again; an address that cannot prove the key is never
// pinned. Candidates are probed only while the pin looks stale, one probe per peer at a time, each
// address at most once a minute.
import { isIP } from 'node:net';
import { randomBytes } from 'node:crypto';
import { canonicalJson } from '../../protocol/canonical.ts';
import { toBase64Url } from '../../protocol/base64.ts';
import { verifySignature } from '../../protocol/keys.ts';
import { isPlainObject } from '../../protocol/validate.ts';
import type { HostNode } from '../core/node.ts';
import type { PeerRow } from '../store/peers-table.ts';
import { lanCall, LanError } from '../transport/lan/client.ts';
import { LAN_VERSION } from '../transport/lan/server.ts';
import { peerLanUnreachable } from '../transport/row-path.ts';
import { ownAddresses, type Beacon } from './beacon.ts';
import { listeningOf, type Listening } from './listening.ts';

/** How often the daemon looks whether its own addresses changed. */
export const ADDRESS_CHECK_MS = 10_000;
/** A beacon that got no answer is tried again after this, at most BEACON_TRIES times in all. */
export const BEACON_RETRY_MS = 60_000;
export const BEACON_TRIES = 5;
/** One candidate address of a peer is probed at most this often. */
export const PROBE_RETRY_MS = 60_000;
/** How long a candidate (from a beacon or a call) stays worth probing. */
export const CANDIDATE_FRESH_MS = 60 * 60_000;
/** How long a probe may take. */
export const PROBE_TIMEOUT_MS = 5_000;

/** The host part of a base URL, brackets of IPv6 removed. */
function hostOf(url: string): string {
  return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Whether `addr` answers GET /v1/status?challenge= as `peer`: its name and pinned host key, our
 * challenge, and a signature by that key over the rest of the answer.
 */
export async function proveAddress(peer: PeerRow, addr: string, random: (n: number) => Uint8Array = randomBytes): Promise<boolean> {
  const challenge = toBase64Url(random(16));
  const answer = await lanCall(addr, 'GET', `/v1/status?challenge=${challenge}`, undefined, null, PROBE_TIMEOUT_MS);
  if (answer.status !== 200 || !isPlainObject(answer.body)) return false;
  const { sig, ...signed } = answer.body;
  return (
    signed.host === peer.host &&
    signed.host_pubkey === peer.host_pubkey &&
    signed.challenge === challenge &&
    verifySignature(peer.host_pubkey, canonicalJson(signed), sig)
  );
}

/** Whether the pinned address looks wrong: the last LAN call failed, or the peer shows up at other IPs than the pinned one. */
function pinLooksStale(peer: PeerRow, candidates: readonly string[]): boolean {
  if (peer.lan_error_at !== null && peer.lan_error_at > (peer.last_ok_at ?? -Infinity)) return true;
  const pinned = hostOf(peer.addr);
  // a pinned name resolves wherever the peer is now: only a failure moves it
  return isIP(pinned) !== 0 && !candidates.some((c) => hostOf(c) === pinned);
}

/** Starts LAN work for a peer in its lane; false when the lane is busy (the work is tried next tick). */
export type StartInLane = (peer: PeerRow, work: () => Promise<void>) => boolean;

export class PresenceKeeper {
  readonly #node: HostNode;
  readonly #log: (line: string) => void;
  /** our addresses as last seen (JSON), and when they were looked at */
  #addrs: string | null = null;
  #addrsAt = -Infinity;
  #seq = 0;
  /** beacons still to send, by peer: when next and how many tries so far (bounded by the peers table) */
  readonly #beacons = new Map<string, { at: number; tries: number }>();
  /** when each `${host}\n${addr}` was last probed (bounded: peers × BEACON_ADDRS_MAX + 1) */
  readonly #probed = new Map<string, number>();

  constructor(node: HostNode, log: (line: string) => void) {
    this.#node = node;
    this.#log = log;
  }

  /** Starts the beacons and probes that are due, each in its peer's LAN lane. */
  start(startInLane: StartInLane): void {
    const node = this.#node;
    const where = listeningOf(node);
    const now = node.nowMs();
    const peers = node.store.peers.list();
    if (where !== undefined && now - this.#addrsAt >= ADDRESS_CHECK_MS) this.#checkAddresses(where, peers, now);
    for (const peer of peers) {
      const beacon = this.#beacons.get(peer.host);
      if (where !== undefined && beacon !== undefined) {
        // to the pinned address: not while it is known dead or an attempt there never ended (it waits)
        const pinDead = peer.lan_attempt_at !== null || peerLanUnreachable(peer, now);
        if (!pinDead && now >= beacon.at) {
          if (startInLane(peer, () => this.#beacon(peer, where))) beacon.at = Infinity;
          continue;
        }
      }
      const candidate = this.#candidate(peer, now);
      if (candidate !== null && startInLane(peer, () => this.#probe(peer, candidate))) this.#probed.set(`${peer.host}\n${candidate}`, now);
    }
    const hosts = new Set(peers.map((p) => p.host));
    for (const host of this.#beacons.keys()) if (!hosts.has(host)) this.#beacons.delete(host);
    for (const [key, at] of this.#probed) if (!hosts.has(key.split('\n', 1)[0] ?? '') || now - at >= PROBE_RETRY_MS) this.#probed.delete(key);
  }

  /** At start, and when our addresses changed: a beacon for every peer. */
  #checkAddresses(where: Listening, peers: readonly PeerRow[], now: number): void {
    this.#addrsAt = now;
    const addrs = JSON.stringify(ownAddresses(where.bind));
    if (addrs === this.#addrs) return;
    if (this.#addrs !== null) this.#log(`this host's addresses changed to ${addrs}: telling the peers`);
    this.#addrs = addrs;
    for (const peer of peers) this.#beacons.set(peer.host, { at: now, tries: 0 });
  }

  async #beacon(peer: PeerRow, where: Listening): Promise<void> {
    const node = this.#node;
    this.#seq = Math.max(node.nowMs(), this.#seq + 1);
    const beacon: Beacon = { v: 1, seq: this.#seq, port: where.port, addrs: ownAddresses(where.bind), version: LAN_VERSION };
    let done: boolean;
    try {
      const answer = await lanCall(peer.addr, 'POST', '/v1/presence', beacon, node);
      // 404: an older peer, which has no use for it
      done = (answer.status >= 200 && answer.status < 300) || answer.status === 404;
    } catch (err) {
      if (!(err instanceof LanError)) throw err;
      done = false;
    }
    const state = this.#beacons.get(peer.host);
    if (state === undefined) return;
    state.tries += 1;
    if (done || state.tries >= BEACON_TRIES) this.#beacons.delete(peer.host);
    else state.at = node.nowMs() + BEACON_RETRY_MS;
  }

  /** The next address worth probing for `peer`, or null. */
  #candidate(peer: PeerRow, now: number): string | null {
    const link = this.#node.store.peerLinks.get(peer.host);
    if (link === undefined) return null;
    const found: string[] = [];
    if (link.call_addr !== null && link.call_at !== null && now - link.call_at < CANDIDATE_FRESH_MS) found.push(link.call_addr);
    if (link.presence_addrs !== null && link.presence_at !== null && now - link.presence_at < CANDIDATE_FRESH_MS) {
      found.push(...(JSON.parse(link.presence_addrs) as string[]));
    }
    const candidates = [...new Set(found)].filter((c) => c !== peer.addr);
    if (candidates.length === 0 || !pinLooksStale(peer, found)) return null;
    return candidates.find((c) => !this.#probed.has(`${peer.host}\n${c}`)) ?? null;
  }

  async #probe(peer: PeerRow, addr: string): Promise<void> {
    let proved: boolean;
    try {
      proved = await proveAddress(peer, addr);
    } catch (err) {
      if (!(err instanceof LanError)) throw err;
      proved = false;
    }
    const now = this.#node.store.peers.get(peer.host);
    // Moved only if the pin is still the one the probe checked (a rotation or re-pairing meanwhile wins).
    if (!proved || now?.host_pubkey !== peer.host_pubkey || now.addr !== peer.addr) return;
    this.#node.store.peerLinks.moveAddr(peer.host, addr);
    this.#log(`${peer.host} moved: its address is now ${addr} (it proved its key there; was ${peer.addr})`);
  }
}
