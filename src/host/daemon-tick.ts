// What one daemon tick does, apart from the timer and the LAN server (daemon.ts) so that tests run
// the very same tick: a relay pull and an outbox flush as two jobs that never wait for each other;
// the flush refreshes keys, fetches missing peer enc keys and starts each (peer, transport)
// delivery in its own lane (delivery-lanes.ts); then, in the lanes the deliveries left free, the
// presence beacons and address probes (presence/) and the directory calls (directory/), and our
// directory as mail where the LAN does not carry it. A disk that refuses writes is named once and
// backs the ticks off until a delivery's result is recorded again.
import type { HostNode } from './core/node.ts';
import { DeliveryLanes } from './delivery-lanes.ts';
import { queueDirectoryMail } from './directory/mail.ts';
import { DirectorySync } from './directory/sync.ts';
import { PresenceKeeper } from './presence/keeper.ts';
import { FailureTally } from './failure-tally.ts';
import { flushOutbox, type FlushReport } from './outbox.ts';
import { nameDiskError } from './store/disk-errors.ts';
import { refreshKeys } from './core/rotation.ts';
import { fetchPeerEncKey, LanTransport } from './transport/lan/client.ts';
import { RelayLink } from './transport/relay/relay-link.ts';
import type { OutboxRow } from './store/outbox-table.ts';
import type { PeerRow } from './store/peers-table.ts';
import type { RowResult, Transport } from './transport/transport.ts';

/** How often the daemon retries fetching a peer's missing enc key. */
export const ENC_KEY_RETRY_MS = 30_000;

export interface DaemonTickOptions {
  log?: (line: string) => void;
  /** hears every row's result besides the daemon's own log (tests) */
  onResult?: FlushReport;
  /** randomness for the jitter of periodic peer calls (tests) */
  random?: () => number;
}

interface Job {
  run(): Promise<void>;
  idle(): Promise<void>;
  busy(): boolean;
}

/**
 * Runs `job` one at a time: a call while it runs folds into one more run after it (and shares its
 * promise). A failed run is reported, never thrown.
 */
function coalesced(job: () => Promise<void>, onError: (err: unknown) => void, stopped: () => boolean): Job {
  let running: Promise<void> | null = null;
  let again = false;
  const run = (): Promise<void> => {
    if (running !== null) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await job();
        } catch (err) {
          onError(err);
        }
      } while (again && !stopped());
    })().finally(() => {
      running = null;
    });
    return running;
  };
  return { run, idle: () => running ?? Promise.resolve(), busy: () => running !== null };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class DaemonTick {
  readonly relay: RelayLink;
  readonly #node: HostNode;
  readonly #log: (line: string) => void;
  readonly #onResult: FlushReport | undefined;
  readonly #lan: Transport;
  readonly #failures: FailureTally;
  /** when each peer's missing enc key was last asked for (bounded by the peers table) */
  readonly #encTried = new Map<string, number>();
  readonly #lanes: DeliveryLanes;
  readonly #pull: Job;
  readonly #flush: Job;
  readonly #directory: DirectorySync;
  readonly #presence: PresenceKeeper;
  #stopped = false;
  /** ends the held-pull loop (holdRelayPulls) */
  readonly #stopHolding = new AbortController();
  #holding: Promise<void> = Promise.resolve();
  /** flushes failed in a row because of the disk (0: it takes writes); the ticks back off while it lasts */
  #diskFailures = 0;

  constructor(node: HostNode, options: DaemonTickOptions = {}) {
    this.#node = node;
    this.#log = options.log ?? (() => {});
    this.#onResult = options.onResult;
    this.#lan = new LanTransport(node);
    this.relay = new RelayLink(node, this.#log);
    this.#failures = new FailureTally(this.#log, node.nowMs());
    this.#directory = new DirectorySync(node, this.#log, options.random);
    this.#presence = new PresenceKeeper(node, this.#log);
    const isStopped = (): boolean => this.#stopped;
    // A lane that finished may leave rows a pass skipped while it was busy: flush again for them.
    this.#lanes = new DeliveryLanes(this.#failed('delivery'), () => {
      if (!this.#stopped && this.#diskFailures === 0) void this.#flush.run();
    });
    this.#pull = coalesced(
      async () => {
        await this.relay.prepare(this.#lan);
        // What a pull applied may have queued receipts or bounces: they leave now, not a tick later.
        if ((await this.relay.pull()) > 0 && !this.#stopped) void this.#flush.run();
      },
      this.#failed('relay pull'),
      isStopped,
    );
    this.#flush = coalesced(
      async () => {
        refreshKeys(node);
        const choose = await this.relay.prepare(this.#lan);
        this.#fetchMissingEncKeys();
        for (const host of queueDirectoryMail(node)) this.#log(`directory mail queued for ${host}`);
        const offered = await flushOutbox(node, choose, (row, result, via) => this.#report(row, result, via), this.#lanes);
        // After the deliveries: a peer's lane carries its mail first, its directory when the lane is free.
        const inLane = (peer: PeerRow, work: () => Promise<void>): boolean => this.#lanes.start(this.#lanKey(peer), [], work);
        this.#presence.start(inLane);
        this.#directory.start(inLane);
        this.#failures.summarize(node.nowMs());
        // A flush only starts deliveries: the disk counts as healed once one recorded its result, or
        // when nothing waits to be written at all.
        if (offered === 0) this.#diskHealed();
      },
      this.#failed('flush'),
      isStopped,
    );
  }

  /** Flushes in a row that failed on the disk (0 while it takes writes). */
  get diskFailures(): number {
    return this.#diskFailures;
  }

  /**
   * One tick: a pull and a flush side by side. The promise ends once nothing it started still runs
   * (the deliveries, and the flushes a pull or a finished lane started), for callers who wait.
   */
  async tick(): Promise<void> {
    await Promise.all([this.#pull.run(), this.#flush.run()]);
    do {
      await this.#flush.idle();
      await this.#lanes.idle();
    } while (this.#flush.busy());
  }

  /**
   * Keeps one held pull out to a relay that advertises max_wait_s (relay-link.ts), beside the ticks:
   * mail through the relay arrives the moment it commits there, and the tick no longer pulls from it.
   * What a held pull applied may have queued receipts or bounces: they leave at once.
   */
  holdRelayPulls(): void {
    const flush = (): void => {
      if (!this.#stopped && this.#diskFailures === 0) void this.#flush.run();
    };
    this.#holding = this.relay.holdPulls(this.#stopHolding.signal, flush).catch(this.#failed('held relay pull'));
  }

  /** One line when the disk starts refusing writes (by a job, a delivery or a peer's call); ticks back off until a write goes through. */
  noteDiskFault(named: string): void {
    if (this.#diskFailures === 0) this.#log(`${named}; the daemon retries, less often while it lasts (mail waits in the outbox)`);
    this.#diskFailures += 1;
  }

  /** Stops starting work and waits for what runs; the last failure summary is logged. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopHolding.abort();
    await Promise.all([this.#pull.idle(), this.#flush.idle(), this.#holding]);
    await this.#lanes.idle();
    this.#failures.summarize(this.#node.nowMs(), true);
  }

  /** A failed job or delivery: a disk refusal is named once and backs the ticks off; anything else is logged as `what failed: …`. */
  #failed(what: string): (err: unknown) => void {
    return (err) => {
      const named = nameDiskError(err, this.#node.home);
      if (named !== null) this.noteDiskFault(named);
      else this.#log(`${what} failed: ${messageOf(err)}`);
    };
  }

  async #fetchEncKey(peer: PeerRow): Promise<void> {
    try {
      await fetchPeerEncKey(this.#node, peer);
      this.#log(`fetched the enc key of ${peer.host}`);
    } catch (err) {
      this.#node.store.peers.noteError(peer.host, messageOf(err));
      try {
        if ((await this.relay.fetchEncKey(peer)) !== null) this.#log(`fetched the enc key of ${peer.host} through the relay`);
      } catch (relayErr) {
        this.#log(messageOf(relayErr));
      }
    }
  }

  /** Starts fetching missing peer enc keys, each in its peer's LAN lane (one LAN call per peer at a time). */
  #fetchMissingEncKeys(): void {
    const now = this.#node.nowMs();
    for (const peer of this.#node.store.peers.list()) {
      if (peer.enc_pub !== null) continue;
      if (now - (this.#encTried.get(peer.host) ?? -Infinity) < ENC_KEY_RETRY_MS) continue;
      if (this.#lanes.start(this.#lanKey(peer), [], () => this.#fetchEncKey(peer))) this.#encTried.set(peer.host, now);
    }
    // Bounded by the peers table: forget hosts that are no longer peers.
    for (const host of this.#encTried.keys()) if (this.#node.store.peers.get(host) === undefined) this.#encTried.delete(host);
  }

  /** The lane of a peer's LAN calls (outbox.ts starts its deliveries in the same one: one LAN call per peer at a time). */
  #lanKey(peer: PeerRow): string {
    return `${peer.host}\n${this.#lan.name}`;
  }

  /** A write went through (or none waits): a disk fault named before is over. */
  #diskHealed(): void {
    if (this.#diskFailures > 0) this.#log(`the disk holding ${this.#node.home} takes writes again`);
    this.#diskFailures = 0;
  }

  /** Hears each row's result once it is recorded, which proves the store took a write. */
  #report(row: OutboxRow, result: RowResult, via: string): void {
    this.#diskHealed();
    if (result.outcome !== 'failed' || row.attempts === 0) this.#log(`${row.kind} ${row.item_id} -> ${row.peer_host}: ${result.detail}`);
    if (result.outcome === 'failed') this.#failures.note(row.peer_host, via, result.detail);
    this.#onResult?.(row, result, via);
  }
}
