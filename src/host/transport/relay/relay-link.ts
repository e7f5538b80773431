// The daemon's use of the relay (design §10): make the session usable, pull and apply what waits
// (prepare and pull run apart, so a flush never waits for a pull nor a pull for a flush), enforce
// the relay rows' deadlines, and choose per row between the LAN and the relay. A row
// goes to the relay once its LAN attempts failed twice or the peer's LAN address is known
// unreachable; a row the relay accepted once never goes back to the LAN.
import type { HostNode } from '../../node.ts';
import { lanOnly } from '../../outbox-kinds.ts';
import type { OutboxRow } from '../../store/outbox-table.ts';
import type { PeerRow } from '../../store/peers-table.ts';
import type { RowResult, Transport } from '../transport.ts';
import type { TransportChooser } from '../../outbox.ts';
import { expireRelayDeadlines } from './relay-deadlines.ts';
import { fetchPeerEncKeyViaRelay } from './relay-enc-ads.ts';
import { pullRelay, type LastAck } from './relay-receive.ts';
import { ensureSession, type RelaySession } from './relay-session.ts';
import { RelayTransport } from './relay-transport.ts';

/** LAN failures of a row before it goes to the relay. */
export const LAN_FAILURES_BEFORE_RELAY = 2;
/** A peer whose LAN call failed this recently (and not succeeded since) is known unreachable. */
export const LAN_UNREACHABLE_FOR_MS = 10 * 60 * 1000;

export function peerLanUnreachable(peer: PeerRow, nowMs: number): boolean {
  return peer.lan_error_at !== null && peer.lan_error_at > (peer.last_ok_at ?? -Infinity) && nowMs - peer.lan_error_at < LAN_UNREACHABLE_FOR_MS;
}

/** Holds relay rows while the relay cannot be used: they wait (with backoff), never go to the LAN. */
class RelayUnavailable implements Transport {
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
    return Promise.resolve(rows.map((r) => ({
      rowId: r.id, outcome: 'rejected' as const,
      detail: `${r.relay_refused ?? 'the relay refused it'}, and ${peer.host} cannot be reached on the LAN`,
    })));
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

export class RelayLink {
  readonly #node: HostNode;
  readonly #log: (line: string) => void;
  readonly #lastAcked: LastAck = { epoch: null, through: null };
  /** the relay state last written to the log: a change is logged once, not every tick */
  #loggedState: string | null = null;
  #lastProblem: string | null = null;
  #session: RelaySession | null = null;

  constructor(node: HostNode, log: (line: string) => void = () => {}) {
    this.#node = node;
    this.#log = log;
  }

  #preparing: Promise<TransportChooser> | null = null;
  #pulling: Promise<number> | null = null;

  /**
   * Makes the relay usable (the session, its deadlines) and returns the transport chooser for a
   * flush. One at a time: a call while one runs shares its answer.
   */
  prepare(lan: Transport): Promise<TransportChooser> {
    this.#preparing ??= this.#prepare(lan).finally(() => { this.#preparing = null; });
    return this.#preparing;
  }

  async #prepare(lan: Transport): Promise<TransportChooser> {
    const node = this.#node;
    expireRelayDeadlines(node);
    if (node.store.relay.get() === undefined) {
      this.#session = null;
      return chooseTransport(node, lan, null, new RelayUnavailable('no relay set'));
    }
    const result = await ensureSession(node);
    if (!result.ok) {
      this.#session = null;
      this.#state(result.state, `relay ${result.state}: ${result.reason}`);
      return chooseTransport(node, lan, null, new RelayUnavailable(result.reason));
    }
    this.#session = result.session;
    this.#state('ok', `relay ready: ${result.session.relay.url} epoch ${result.session.relay.epoch ?? '?'}`);
    return chooseTransport(node, lan, new RelayTransport(node, result.session), new RelayUnavailable('no session'));
  }

  /**
   * Pulls and applies what waits on the relay with the session the last prepare made; returns how
   * many items it applied. One at a time: a call while one runs waits for it.
   */
  pull(): Promise<number> {
    this.#pulling ??= this.#pull().finally(() => { this.#pulling = null; });
    return this.#pulling;
  }

  async #pull(): Promise<number> {
    const node = this.#node;
    const session = this.#session;
    if (session === null) return 0;
    const pulled = await pullRelay(node, session, ({ item, result: status }) => {
      this.#log(`relay ${item.kind} ${item.item_id} seq ${item.seq}: ${status}`);
    }, this.#lastAcked);
    if (pulled.acked !== null) this.#log(`relay acked through ${pulled.acked}`);
    const after = node.store.relay.get();
    if (after !== undefined && after.state !== 'ok') this.#state(after.state, `relay ${after.state}: ${pulled.error ?? after.detail ?? ''}`);
    else this.#problem(pulled.error === null ? null : `relay: ${pulled.error}`);
    return pulled.applied;
  }

  /** A peer's enc key through the relay when the LAN cannot give it; null when there is no session. */
  async fetchEncKey(peer: PeerRow): Promise<string | null> {
    if (this.#session === null) return null;
    return fetchPeerEncKeyViaRelay(this.#node, this.#session.api, peer);
  }

  #state(state: string, line: string): void {
    if (state !== this.#loggedState) this.#log(line);
    this.#loggedState = state;
  }

  #problem(text: string | null): void {
    if (text !== null && text !== this.#lastProblem) this.#log(text);
    this.#lastProblem = text;
  }
}
