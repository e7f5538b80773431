// Which path an outbox row takes, LAN or relay, decided here only (design §10):
// - at send, a sealed copy the pinned relay would refuse for its size (rejected:item over size
//   limit) goes over the LAN only while its host is known up there, else the send is refused;
// - per flush, a row goes to the relay once its LAN attempts failed twice or the peer's LAN address
//   is known unreachable; a row the relay accepted once never goes back to the LAN; a row the relay
//   refused for good goes over the LAN, or ends rejected when the LAN cannot carry it either;
// - rotation records go over the LAN only.
import { readRefusalStatus } from '../../protocol/relay-api/item-results.ts';
import { isoTime, type HostNode } from '../core/node.ts';
import type { OutboxKind } from '../store/outbox-kinds.ts';
import type { OutboxRow } from '../store/outbox-table.ts';
import type { PeerRow } from '../store/peers-table.ts';
import type { RowResult, Transport, TransportChooser } from './transport.ts';

/** max_item_bytes assumed until the relay's info said otherwise (the reference deployment's 512 KiB). */
export const DEFAULT_MAX_ITEM_BYTES = 512 * 1024;

export interface SealedCopy {
  host: string;
  wire: string;
}

export type RelayFit = { ok: true; lanOnly: ReadonlyMap<string, string> } | { ok: false; problem: string };

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
        problem:
          `the sealed message is ${bytes} bytes, over the relay's limit of ${limit} bytes (max_item_bytes), and ${copy.host} ` +
          `is ${probedDown.has(copy.host) ? 'not reachable on the LAN now (probed)' : 'not known up on the LAN'}` +
          `${peer?.last_ok_at == null ? ', never seen there' : `, not seen on the LAN since ${isoTime(peer.last_ok_at)}`}: ` +
          `send a body of at most about ${fits} bytes, or split it`,
      };
    }
    lanOnly.set(copy.host, `too large for the relay (${bytes} bytes, max_item_bytes ${limit}): LAN only`);
  }
  return { ok: true, lanOnly };
}

/**
 * Rotation records go over the LAN only (ours, design §10): the peer learns our new key from the
 * record itself, and the relay already moved our queue over when we rotated there.
 */
export function lanOnly(kind: OutboxKind): boolean {
  return kind === 'rotation';
}

/**
 * Whether the relay refused these bytes for good (the catalogue's `final`, protocol/relay-api/item-results.ts):
 * the row then leaves the relay's path. Any other `rejected:` (rate, quota, a target not yet enrolled
 * or not yet naming this host, or a reason newer than this host) keeps the row with backoff.
 */
export function isFinalRelayRefusal(status: string): boolean {
  return readRefusalStatus(status)?.final === true;
}

/** LAN failures of a row before it goes to the relay. */
export const LAN_FAILURES_BEFORE_RELAY = 2;
/** A peer whose LAN call failed this recently (and not succeeded since) is known unreachable. */
export const LAN_UNREACHABLE_FOR_MS = 10 * 60 * 1000;

export function peerLanUnreachable(peer: PeerRow, nowMs: number): boolean {
  return peer.lan_error_at !== null && peer.lan_error_at > (peer.last_ok_at ?? -Infinity) && nowMs - peer.lan_error_at < LAN_UNREACHABLE_FOR_MS;
}

/** Holds relay rows while the relay cannot be used: they wait (with backoff), never go to the LAN. */
export class RelayUnavailable implements Transport {
  readonly name = 'relay';
  readonly #reason: string;
  constructor(reason: string) {
    this.#reason = reason;
  }
  deliver(_peer: PeerRow, rows: readonly OutboxRow[]): Promise<RowResult[]> {
    return Promise.resolve(rows.map((r) => ({ rowId: r.id, outcome: 'failed' as const, detail: `relay not usable: ${this.#reason}` })));
  }
}

/** Settles rows the relay refused for good once the LAN cannot carry them either. */
class RefusedEverywhere implements Transport {
  readonly name = 'relay';
  deliver(peer: PeerRow, rows: readonly OutboxRow[]): Promise<RowResult[]> {
    return Promise.resolve(
      rows.map((r) => ({
        rowId: r.id,
        outcome: 'rejected' as const,
        detail: `${r.relay_refused ?? 'the relay refused it'}, and ${peer.host} cannot be reached on the LAN`,
      })),
    );
  }
}
const refusedEverywhere = new RefusedEverywhere();

/**
 * Per row: a row the relay refused for good goes over the LAN while the peer may be reachable there,
 * else it ends rejected; the relay (usable or not) for rows it accepted before; else the relay when
 * the LAN failed.
 */
export function chooseTransport(node: HostNode, lan: Transport, relay: Transport | null, unavailable: Transport): TransportChooser {
  return (peer, row) => {
    if (lanOnly(row.kind)) return lan;
    if (row.relay_refused !== null) return peerLanUnreachable(peer, node.nowMs()) ? refusedEverywhere : lan;
    if (row.relay_accepted_at !== null) return relay ?? unavailable;
    if (relay === null) return lan;
    return row.attempts >= LAN_FAILURES_BEFORE_RELAY || peerLanUnreachable(peer, node.nowMs()) ? relay : lan;
  };
}
