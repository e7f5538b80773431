// The daemon's use of the relay (design §10): make the session usable, pull and apply what waits
// (prepare and pull run apart, so a flush never waits for a pull nor a pull for a flush), enforce
// the relay rows' deadlines, and hand each flush the per-row choice between the LAN and the relay
// (row-path.ts). A relay that advertises `max_wait_s` gets one held pull at a time (holdPulls), sent
// again as soon as one is answered; the daemon's tick then pulls no more from it.
import type { HostNode } from '../../core/node.ts';
import type { PeerRow } from '../../store/peers-table.ts';
import { chooseTransport, RelayUnavailable } from '../row-path.ts';
import type { Transport, TransportChooser } from '../transport.ts';
import { expireRelayDeadlines } from './relay-deadlines.ts';
import { fetchPeerEncKeyViaRelay } from '../../relay-client/enc-ads.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { readInfoAnswer } from '../../../protocol/relay-api/info.ts';
import { backoffMs } from '../../core/outbox-pace.ts';
import { pullRelay, type HeldPullOptions, type LastAck, type PullOutcome } from './relay-receive.ts';
import { ensureSession, UNREACHABLE_RETRY_MAX_MS, type RelaySession } from '../../relay-client/session.ts';
import { RelayTransport } from './relay-transport.ts';
import { heldPullWaitS } from '../../relay-client/held-wait.ts';

/** A relay that answered a pull this recently is pulled again within seconds when a pull gets no answer (it restarted, say). */
export const RECENT_ANSWER_MS = 5 * 60_000;
/** Bounds of the jittered pause before a held pull that got no answer is sent again, while the relay answered recently. */
export const HELD_PULL_RETRY_MIN_MS = 250;
export const HELD_PULL_RETRY_MAX_MS = 3_000;
/**
 * A held pull answered empty within this was not held: the relay's table is full (its cap, from its
 * heap) or it is stopping. The next pull then waits HELD_PULL_NOT_HELD_PAUSE_MS, as the tick's poll
 * would, instead of asking again at once in a loop.
 */
export const HELD_PULL_NOT_HELD_MS = 1_000;
export const HELD_PULL_NOT_HELD_PAUSE_MS = 2_000;

export class RelayLink {
  readonly #node: HostNode;
  readonly #log: (line: string) => void;
  readonly #lastAcked: LastAck = { epoch: null, through: null };
  /** the relay state last written to the log: a change is logged once, not every tick */
  #loggedState: string | null = null;
  #lastProblem: string | null = null;
  #session: RelaySession | null = null;
  /** a held-pull loop pulls from the relay: the tick's pull stands aside */
  #holding = false;
  /** the held wait the pinned relay allows (null: it holds no pulls), per relay url and key */
  #heldWait: { relay: string; waitS: number | null } | null = null;
  /** who waits for the next prepare to end (the held-pull loop, while it has no session) */
  #prepareWaiters: Array<() => void> = [];

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
    this.#preparing ??= this.#prepare(lan).finally(() => {
      this.#preparing = null;
      for (const wake of this.#prepareWaiters.splice(0)) wake();
    });
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
    // a held pull is out already: it answers the moment something comes
    if (this.#holding) return Promise.resolve(0);
    this.#pulling ??= this.#pull(this.#session)
      .then((outcome) => outcome.applied)
      .finally(() => {
        this.#pulling = null;
      });
    return this.#pulling;
  }

  async #pull(session: RelaySession | null, held?: HeldPullOptions): Promise<PullOutcome> {
    const node = this.#node;
    if (session === null) return { applied: 0, acked: null, error: null };
    const pulled = await pullRelay(
      node,
      session,
      ({ item, result: status }) => {
        this.#log(`relay ${item.kind} ${item.item_id} seq ${item.seq}: ${status}`);
      },
      this.#lastAcked,
      held,
    );
    if (pulled.acked !== null) this.#log(`relay acked through ${pulled.acked}`);
    const after = node.store.relay.get();
    if (after !== undefined && after.state !== 'ok') this.#state(after.state, `relay ${after.state}: ${pulled.error ?? after.detail ?? ''}`);
    else this.#problem(pulled.error === null ? null : `relay: ${pulled.error}`);
    return pulled;
  }

  /**
   * The daemon's held pull: while the session's relay advertises `max_wait_s`, one pull is out at a
   * time and the next goes as soon as one is answered; `onApplied` hears when one applied items (its
   * receipts may leave) or found the relay back after it was unreachable (the outbox may move). A
   * pull that got no answer is sent again after a jittered pause: a few seconds while the relay
   * answered within RECENT_ANSWER_MS (a restart), else the unreachable backoff. Without a session,
   * or with a relay that holds no pulls, the tick pulls as before and this loop waits for the next
   * prepare. Ends when `stop` aborts.
   */
  async holdPulls(stop: AbortSignal, onApplied: () => void, random: () => number = Math.random): Promise<void> {
    const node = this.#node;
    let lastAnswerAt = -Infinity;
    let failures = 0;
    try {
      while (!stop.aborted) {
        const session = this.#session;
        const waitS = session === null ? null : await this.#heldWaitOf(session);
        if (session === null || waitS === null) {
          this.#holding = false;
          await new Promise<void>((resolve) => {
            this.#prepareWaiters.push(resolve);
            stop.addEventListener('abort', () => resolve(), { once: true });
          });
          continue;
        }
        this.#holding = true;
        // a tick's pull started before the loop held: one pull at a time
        await this.#pulling;
        const wasUnreachable = node.store.relay.get()?.state === 'unreachable';
        // after a pull that got no answer, one that is answered at once tells that the relay is back
        const asked = wasUnreachable || failures > 0 ? 0 : waitS;
        // real time, not the node's clock: how long the relay really held the request
        const sentAt = performance.now();
        const outcome = await this.#pull(session, { waitS: asked, stop });
        if (stop.aborted) break;
        const state = node.store.relay.get()?.state;
        if (outcome.error === null) {
          lastAnswerAt = node.nowMs();
          failures = 0;
          if (wasUnreachable && state === 'unreachable') node.store.relay.update({ state: 'ok', detail: null, failures: 0, retry_at: 0 });
          if (outcome.applied > 0 || wasUnreachable) onApplied();
          const notHeld = asked > 0 && outcome.applied === 0 && outcome.acked === null && performance.now() - sentAt < HELD_PULL_NOT_HELD_MS;
          if (notHeld) await sleep(HELD_PULL_NOT_HELD_PAUSE_MS, undefined, { signal: stop }).catch(() => {});
          continue;
        }
        if (outcome.applied > 0) onApplied();
        if (state !== 'unreachable') {
          // refused (the session is redone by the next prepare), or an item could not be applied: try again after the next tick
          this.#session = null;
          continue;
        }
        failures += 1;
        const recent = node.nowMs() - lastAnswerAt < RECENT_ANSWER_MS;
        const pauseMs = recent
          ? HELD_PULL_RETRY_MIN_MS + random() * (HELD_PULL_RETRY_MAX_MS - HELD_PULL_RETRY_MIN_MS)
          : Math.min(backoffMs(failures), UNREACHABLE_RETRY_MAX_MS) * (0.5 + random() / 2);
        await sleep(pauseMs, undefined, { signal: stop }).catch(() => {});
      }
    } finally {
      this.#holding = false;
    }
  }

  /** How long the session's relay may hold a pull (held-wait.ts), or null when it holds none; asked once per relay. */
  async #heldWaitOf(session: RelaySession): Promise<number | null> {
    const relay = `${session.relay.url}|${session.relay.relay_pubkey}`;
    if (this.#heldWait?.relay === relay) return this.#heldWait.waitS;
    let waitS: number | null;
    try {
      const info = readInfoAnswer(await session.api.info());
      if (!info.ok) return null;
      waitS = heldPullWaitS(info.value.limits);
    } catch {
      // no answer: polled by the tick until the next prepare
      return null;
    }
    this.#heldWait = { relay, waitS };
    if (waitS !== null) this.#log(`relay holds pulls: up to ${waitS} s each`);
    return waitS;
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
