// Held pulls in the bench (issue 30): an idle fleet (N enrolled hosts, each holding its pull, or
// polling every 2 s as a daemon without held pulls does; nobody sends) measured as the relay's CPU
// (% of one core) and resident memory, and a wake phase: a sender pushes single items to random
// hosts of the fleet while they hold their pulls, and the time from the push's accept (its answer
// here) to the target's held pull answering with the item is taken for every item.
import { Agent, request } from 'node:http';
import { signRelayHop } from '../src/protocol/relay-hop.ts';
import { enrolHost, itemMaker, percentile, type Host } from './load.ts';
import type { RelayChild } from './relay-child.ts';
import { machineBusyPercent, sampleMachineCpu } from './machine-cpu.ts';

/** The wait each held pull asks for (the relay's default max_wait_s). */
export const HELD_WAIT_S = 55;
/** A daemon's tick, the polling the held pull replaces. */
export const POLL_INTERVAL_MS = 2_000;

/** One connection per host: a held pull keeps its socket for up to HELD_WAIT_S. */
const fleetAgent = new Agent({ keepAlive: true, maxSockets: Infinity });

export type FleetHost = Host;

/** Enrols `count` hosts, `concurrency` at a time. */
export async function enrolFleet(url: string, count: number, concurrency = 16): Promise<FleetHost[]> {
  const hosts: FleetHost[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next++;
        hosts[index] = await enrolHost(url, `fleet-${index}`);
      }
    }),
  );
  return hosts;
}

export interface IdleFleetResult {
  hosts: number;
  mode: 'held' | 'polling';
  seconds: number;
  /** the relay's CPU over the phase, % of one core (all its processes and threads) */
  relayCpuPercent: number;
  /** the relay's resident memory at the end, summed over its processes, bytes */
  relayRssBytes: number;
  /** the whole machine's CPU over the phase, % of one core */
  machineBusyPercent: number;
  pulls: number;
}

export interface WakeResult {
  items: number;
  p50Ms: number;
  p99Ms: number;
}

interface PageAnswer {
  status: number;
  items: string[];
  lastSeq: number;
}

function pull(url: URL, host: FleetHost, after: number, waitS: number): Promise<PageAnswer> {
  const path = `/v2/relay/items?after=${after}${waitS > 0 ? `&wait=${waitS}` : ''}`;
  const headers = { ...signRelayHop({ method: 'GET', path, rawBody: '' }, host.name, host.key, Date.now()) };
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method: 'GET', path, headers, agent: fleetAgent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { items?: Array<{ item_id: string }>; last_seq?: number };
          resolve({ status: res.statusCode ?? 0, items: (body.items ?? []).map((i) => i.item_id), lastSeq: body.last_seq ?? after });
        } catch (error) {
          reject(error);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The fleet's pull loops: each host holds its pull (or polls), moving its cursor; `onItems` hears what each answer brought. */
class Fleet {
  readonly #url: URL;
  readonly #hosts: FleetHost[];
  #running = true;
  pulls = 0;
  failures = 0;
  onItems: (items: string[], at: number) => void = () => {};

  constructor(url: string, hosts: FleetHost[]) {
    this.#url = new URL(url);
    this.#hosts = hosts;
  }

  start(mode: 'held' | 'polling'): void {
    for (const [index, host] of this.#hosts.entries())
      void (async () => {
        let after = 0;
        // polling hosts spread over the interval, as daemons started at different times are
        if (mode === 'polling') await new Promise((resolve) => setTimeout(resolve, (index * POLL_INTERVAL_MS) / this.#hosts.length));
        while (this.#running) {
          const sent = Date.now();
          try {
            const page = await pull(this.#url, host, after, mode === 'held' ? HELD_WAIT_S : 0);
            this.pulls += 1;
            if (page.items.length > 0) this.onItems(page.items, Date.now());
            after = page.lastSeq;
          } catch {
            this.failures += 1;
          }
          if (mode === 'polling' && this.#running) await new Promise((resolve) => setTimeout(resolve, Math.max(0, POLL_INTERVAL_MS - (Date.now() - sent))));
        }
      })();
  }

  /** Stops re-issuing; a held pull still out ends when the relay stops (it answers every held pull then). */
  stop(): void {
    this.#running = false;
  }
}

/** Runs the fleet idle for `seconds` (after `settleSeconds` for every pull to be out) and measures the relay. */
export async function idleFleetPhase(
  relay: RelayChild,
  hosts: FleetHost[],
  mode: 'held' | 'polling',
  seconds: number,
  cores: number,
  settleSeconds = 3,
): Promise<IdleFleetResult & { fleet: Fleet }> {
  const fleet = new Fleet(relay.url, hosts);
  fleet.start(mode);
  await new Promise((resolve) => setTimeout(resolve, settleSeconds * 1000));
  const cpuBefore = relay.cpuMs();
  const machineBefore = sampleMachineCpu();
  const pullsBefore = fleet.pulls;
  const started = Date.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const elapsedMs = Date.now() - started;
  return {
    hosts: hosts.length,
    mode,
    seconds: elapsedMs / 1000,
    relayCpuPercent: (100 * (relay.cpuMs() - cpuBefore)) / elapsedMs,
    relayRssBytes: relay.rssBytes(),
    machineBusyPercent: machineBusyPercent(machineBefore, sampleMachineCpu(), cores),
    pulls: fleet.pulls - pullsBefore,
    fleet,
  };
}

/**
 * With the fleet holding its pulls: `items` single-item pushes from `sender`, one at a time, each to a
 * random host of the fleet; the latency of each is from its accept (the push's answer) to the held
 * pull's answer carrying it (0 when that answer came first).
 */
export async function wakePhase(fleet: Fleet, sender: Host, targets: FleetHost[], items: number): Promise<WakeResult> {
  const makers = new Map<string, () => { item: unknown }>();
  const acceptedAt = new Map<string, number>();
  const answeredAt = new Map<string, number>();
  let allAnswered: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allAnswered = resolve;
  });
  fleet.onItems = (ids, at) => {
    for (const id of ids) if (!answeredAt.has(id)) answeredAt.set(id, at);
    if (answeredAt.size >= items) allAnswered();
  };
  for (let i = 0; i < items; i += 1) {
    const target = targets[Math.floor(Math.random() * targets.length)] as FleetHost;
    let make = makers.get(target.name);
    if (make === undefined) {
      make = itemMaker(sender, target);
      makers.set(target.name, make);
    }
    const { item } = make();
    const id = (item as { item_id: string }).item_id;
    const answer = await sender.api.call('POST', '/v2/relay/items', JSON.stringify({ items: [item] }));
    if (answer.status !== 200) throw new Error(`wake push answered ${answer.status}`);
    acceptedAt.set(id, Date.now());
  }
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 30_000))]);
  const latencies = [...acceptedAt].map(([id, at]) => Math.max(0, (answeredAt.get(id) ?? Number.POSITIVE_INFINITY) - at)).sort((a, b) => a - b);
  return { items: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

export type { Fleet };
