// What the pinned relay will take, known before anything is queued: a message whose sealed copy the
// relay would refuse (rejected:item over size limit) is refused at send, unless that copy's host is
// reachable on the LAN, where it then goes only (never to the relay).
import type { HostNode } from '../../node.ts';
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
function lanKnownUp(peer: PeerRow | undefined): boolean {
  return peer?.last_ok_at != null && (peer.lan_error_at === null || peer.last_ok_at > peer.lan_error_at);
}

/**
 * Whether each sealed copy fits the pinned relay's max_item_bytes. A copy over it goes over the LAN
 * only (`lanOnly`: host → the reason kept on its row) while its host is known up there; otherwise the
 * send is refused with the body size that would fit. A sealed envelope carries its ciphertext twice
 * (`body` and `enc.body`, protocol §4.1): two base64 copies, 8 characters per 3 bytes of body + tag.
 */
export function relayFit(node: HostNode, copies: readonly SealedCopy[], plainBodyBytes: number): RelayFit {
  const relay = node.store.relay.get();
  const lanOnly = new Map<string, string>();
  if (relay === undefined) return { ok: true, lanOnly };
  const limit = relay.max_item_bytes ?? DEFAULT_MAX_ITEM_BYTES;
  for (const copy of copies) {
    const bytes = Buffer.byteLength(copy.wire, 'utf8');
    if (bytes <= limit) continue;
    if (!lanKnownUp(node.store.peers.get(copy.host))) {
      const overhead = bytes - 2 * Math.ceil((plainBodyBytes + 16) / 3) * 4;
      const fits = Math.max(0, 3 * Math.floor((limit - overhead) / 8) - 16);
      return {
        ok: false,
        problem: `the sealed message is ${bytes} bytes, over the relay's limit of ${limit} bytes (max_item_bytes), and ${copy.host} `
          + `is not reachable on the LAN: send a body of at most about ${fits} bytes, or split it`,
      };
    }
    lanOnly.set(copy.host, `too large for the relay (${bytes} bytes, max_item_bytes ${limit}): LAN only`);
  }
  return { ok: true, lanOnly };
}
