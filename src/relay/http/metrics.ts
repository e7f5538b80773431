// The relay's Prometheus metrics (prom-client), one registry per relay: requests by route and
// status, pushed items by outcome, commit groups, queue depth and oldest item age (read from the
// store at scrape time), enrolments, key and epoch rotations, sweeps, rate-limit refusals and
// refusals by the disk.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ItemOutcomeCode } from '../../protocol/relay-api/item-results.ts';
import type { CoreObserver } from '../core/context.ts';

/** A scrape that cannot be answered now (a relay group's figures could not be gathered): HTTP 503, the scraper tries again. */
export class MetricsUnavailableError extends Error {
  override name = 'MetricsUnavailableError';
}

export interface QueueTotals {
  items: number;
  /** accepted_at (ms) of the queued item nearest expiry, or null when nothing is queued */
  oldestAcceptedAt: number | null;
}

export class RelayMetrics implements CoreObserver {
  readonly registry = new Registry();
  readonly #requests = new Counter({
    name: 'agentmbx_http_requests_total',
    help: 'HTTP requests answered, by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });
  readonly #items = new Counter({
    name: 'agentmbx_push_items_total',
    help: 'pushed items by outcome (accepted, duplicate, rejected) and rejection reason (its code in protocol/relay-api/item-results.ts)',
    labelNames: ['outcome', 'reason'] as const,
    registers: [this.registry],
  });
  readonly #groupSize = new Histogram({
    name: 'agentmbx_commit_group_size',
    help: 'write transactions per durable COMMIT (group commit)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [this.registry],
  });
  readonly #groupSeconds = new Histogram({
    name: 'agentmbx_commit_group_seconds',
    help: 'time from the BEGIN of a commit group to the WAL sync that made it durable',
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly #enrolments = new Counter({ name: 'agentmbx_enrolments_total', help: 'successful enrolments', registers: [this.registry] });
  readonly #keyRotations = new Counter({ name: 'agentmbx_key_rotations_total', help: 'host key rotations accepted', registers: [this.registry] });
  readonly #epochRotations = new Counter({
    name: 'agentmbx_epoch_rotations_total',
    help: 'relay epoch rotations made by this process',
    registers: [this.registry],
  });
  readonly #sweeps = new Counter({
    name: 'agentmbx_sweeps_total',
    help: 'expiry sweeps run, by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly #rateRefusals = new Counter({
    name: 'agentmbx_rate_limit_refusals_total',
    help: 'refusals by a rate limit: push items (rejected:rate) and enrolment calls (429)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  readonly #diskRefusals = new Counter({
    name: 'agentmbx_store_disk_refusals_total',
    help: 'store transactions refused because of the disk, by fault (full, io, sync)',
    labelNames: ['fault'] as const,
    registers: [this.registry],
  });
  #queue: (() => Promise<QueueTotals>) | null = null;
  #heldPulls: () => number = () => 0;
  #heldPullsLimit: () => number = () => 0;
  #groupExposition: (() => Promise<{ contentType: string; body: string }>) | null = null;
  #nowMs: () => number = Date.now;

  constructor() {
    const metrics = this;
    let totals: Promise<QueueTotals | null> | null = null;
    // both gauges read one query per scrape; a store that refuses it (a failed sync) leaves them at 0,
    // so that the other metrics (the disk refusals among them) are still served
    const read = (): Promise<QueueTotals | null> => {
      totals ??= (metrics.#queue?.() ?? Promise.resolve(null))
        .catch(() => null)
        .finally(() => {
          setImmediate(() => {
            totals = null;
          });
        });
      return totals;
    };
    // every worker of a group reads the same store: a group's figure is one of them, not their sum
    new Gauge({
      name: 'agentmbx_queue_items',
      help: 'items queued for all hosts',
      registers: [this.registry],
      aggregator: 'max',
      async collect() {
        this.set((await read())?.items ?? 0);
      },
    });
    new Gauge({
      name: 'agentmbx_queue_oldest_item_age_seconds',
      help: 'age of the queued item nearest expiry (0 when nothing is queued)',
      registers: [this.registry],
      aggregator: 'max',
      async collect() {
        const oldest = (await read())?.oldestAcceptedAt ?? null;
        this.set(oldest === null ? 0 : Math.max(0, (metrics.#nowMs() - oldest) / 1000));
      },
    });
    new Gauge({
      name: 'agentmbx_held_pulls',
      help: 'pulls held open now, waiting for an item (protocol.md §3.4 wait)',
      registers: [this.registry],
      collect() {
        this.set(metrics.#heldPulls());
      },
    });
    new Gauge({
      name: 'agentmbx_held_pulls_limit',
      help: 'pulls this relay holds at most (each process: MAX_HELD_PULLS, or fewer where its heap is smaller); past it a pull is answered at once',
      registers: [this.registry],
      collect() {
        this.set(metrics.#heldPullsLimit());
      },
    });
  }

  /** Where the count of held pulls and their cap come from (gauges summed over a group's workers). */
  attachHeldPulls(count: () => number, limit: () => number): void {
    this.#heldPulls = count;
    this.#heldPullsLimit = limit;
  }

  /** Where queue depth and age come from (read at each scrape) and the relay's clock. */
  attachQueue(queue: () => Promise<QueueTotals>, nowMs: () => number): void {
    this.#queue = queue;
    this.#nowMs = nowMs;
  }

  request(route: string, status: number): void {
    this.#requests.inc({ route, status: String(status) });
    if (status === 429) this.#rateRefusals.inc({ limit: 'enrolment' });
  }

  /** A route's 200 answer: counts enrolments and key rotations. */
  answered(route: string): void {
    if (route === '/v1/relay/enrol') this.#enrolments.inc();
    else if (route === '/v2/relay/rotate') this.#keyRotations.inc();
  }

  /** The core's outcome of each pushed item; the reasons are the catalogue's codes, a bounded label set. */
  itemsPushed(outcomes: readonly ItemOutcomeCode[]): void {
    for (const outcome of outcomes) {
      if (outcome === 'accepted' || outcome === 'duplicate') {
        this.#items.inc({ outcome, reason: '' });
        continue;
      }
      if (outcome === 'rate') this.#rateRefusals.inc({ limit: 'push' });
      this.#items.inc({ outcome: 'rejected', reason: outcome });
    }
  }

  groupCommitted(size: number, latencyMs: number): void {
    this.#groupSize.observe(size);
    this.#groupSeconds.observe(latencyMs / 1000);
  }

  diskRefused(fault: string): void {
    this.#diskRefusals.inc({ fault });
  }

  epochRotated(): void {
    this.#epochRotations.inc();
  }

  swept(ok: boolean): void {
    this.#sweeps.inc({ result: ok ? 'ok' : 'failed' });
  }

  /** The Prometheus text exposition and its content type: this registry's, or the relay group's (exposeGroup). */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return this.#groupExposition?.() ?? { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** A worker of a relay group answers scrapes with the whole group's figures (group-metrics.ts). */
  exposeGroup(exposition: () => Promise<{ contentType: string; body: string }>): void {
    this.#groupExposition = exposition;
  }
}
