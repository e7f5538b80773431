// What the pinned relay will take, known before anything is queued: a message whose sealed copy the
// relay would refuse (rejected:item over size limit) is refused at send, unless that copy's host is
// reachable on the LAN, where it then goes only (never to the relay).
import { isoTime, type HostNode } from '../../node.ts';
import type { PeerRow } from '../../store/peers-table.ts';

/** max_item_bytes assumed until the relay's info said otherwise (the reference deployment's 512 KiB). */
export const DEFAULT_MAX_ITEM_BYTES = 512 * 1024;

export interface SealedCopy {
  host: string;
  wire: string;
}

export type RelayFit =
  | { ok: true; lanOnly: ReadonlyMap<string, string> }
  | { ok: false; problem: string };

/** The peer's last LAN call succeeded, and none failed since. */
export function lanKnownUp(peer: PeerRow | undefined): boolean {
  return peer?.last_ok_at != null && (peer.lan_error_at === null || peer.last_ok_at > peer.lan_error_at);
}

/**
 * The size of a sealed copy of a `plainBodyBytes` body, from above: two base64 copies of the ciphertext
 * (8 characters per 3 bytes of body + tag) and room for every other field at its limits.
 */
export function sealedSizeBound(plainBodyBytes: number): number {
  return 8 * Math.ceil((plainBodyBytes + 16) / 3) + SEALED_FIELDS_BOUND_BYTES;
}

/** Room for an envelope's fields beside its body (addresses, subject, refs, meta, enc, sig), generously. */
const SEALED_FIELDS_BOUND_BYTES = 64 * 1024;

/**
 * Whether each sealed copy fits the pinned relay's max_item_bytes. A copy over it goes over the LAN
 * only (`lanOnly`: host → the reason kept on its row) while its host is known up there; otherwise the
 * send is refused with the body size that would fit. A sealed envelope carries its ciphertext twice
 * (`body` and `enc.body`, protocol §4.1): two base64 copies, 8 characters per 3 bytes of body + tag.
 */
export function relayFit(node: HostNode, copies: readonly SealedCopy[], plainBodyBytes: number, probedDown: ReadonlySet<string> = new Set()): RelayFit {
  const relay = node.store.relay.get();
  const lanOnly = new Map<string, string>();
  if (relay === undefined) return { ok: true, lanOnly };
  const limit = relay.max_item_bytes ?? DEFAULT_MAX_ITEM_BYTES;
  for (const copy of copies) {
    const bytes = Buffer.byteLength(copy.wire, 'utf8');
    if (bytes <= limit) continue;
    const peer = node.store.peers.get(copy.host);
    if (!lanKnownUp(peer)) {
      const overhead = bytes - 2 * Math.ceil((plainBodyBytes + 16) / 3) * 4;
      const fits = Math.max(0, 3 * Math.floor((limit - overhead) / 8) - 16);
      return {
        ok: false,
        problem: `the sealed message is ${bytes} bytes, over the relay's limit of ${limit} bytes (max_item_bytes), and ${copy.host} `
          + `is ${probedDown.has(copy.host) ? 'not reachable on the LAN now (probed)' : 'not known up on the LAN'}`
          + `${peer?.last_ok_at == null ? ', never seen there' : `, not seen on the LAN since ${isoTime(peer.last_ok_at)}`}: `
          + `send a body of at most about ${fits} bytes, or split it`,
      };
    }
    lanOnly.set(copy.host, `too large for the relay (${bytes} bytes, max_item_bytes ${limit}): LAN only`);
  }
  return { ok: true, lanOnly };
}
