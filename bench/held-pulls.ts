// Held pulls in the bench (issue 30): an idle fleet (N enrolled hosts, each holding its pull, or
// polling every 2 s as a daemon without held pulls does; nobody sends) measured as the relay's CPU
// (% of one core) and resident memory, and a wake phase: a sender pushes single items to random
// hosts of the fleet while they hold their pulls, and the time from the push's accept (its answer
// here) to the target's held pull answering with the item is taken for every item.
//
// The fleet runs in child processes of FLEET_HOSTS_PER_PROCESS hosts each (fleet-process.ts): a
// process holds one socket per host, and one process may not open more files than the machine's
// open-file limit (20,000 here). The push's accept is timed here and the held pull's answer in the
// fleet process, both by sharedClockMs (performance.timeOrigin + performance.now()).
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateEncKeyPair } from '../src/protocol/keys.ts';
import { type FailureCauses, type FromFleetProcess, type PullMode, sharedClockMs, type ToFleetProcess } from './fleet-messages.ts';
import { type Host, type ItemTarget, itemMaker, percentile } from './load.ts';
import { machineBusyPercent, sampleMachineCpu } from './machine-cpu.ts';
import type { RelayChild } from './relay-child.ts';

/** The wait each held pull asks for (the relay's default max_wait_s). */
export const HELD_WAIT_S = 55;
/** A daemon's tick, the polling the held pull replaces. */
export const POLL_INTERVAL_MS = 2_000;
/** Hosts per fleet process: its sockets stay far below a per-process open-file limit of 20,000, its heap small. */
export const FLEET_HOSTS_PER_PROCESS = 5_000;
/** How long a held phase waits for the relay to hold every pull of the fleet before it measures anyway (and says so). */
const HELD_SETTLE_TIMEOUT_MS = 180_000;
/** Share of the fleet's pulls held that counts as all of them (in the steady state a few are always being re-issued). */
const HELD_SETTLED_SHARE = 0.99;
/** How long after the last push the wake phase waits for the held pulls' answers. */
const WAKE_ANSWER_TIMEOUT_MS = 30_000;

const FLEET_SCRIPT = join(import.meta.dirname, 'fleet-process.ts');
/**
 * A fleet process's young generation kept small: enrolling its hosts through fetch (the host's own
 * client) makes a lot of short-lived garbage, and with Node's default semispaces the heap grew to
 * about 250 MB RSS per 2,000 enrolments and stayed there; with 1 MiB ones a process of 5,000 hosts
 * holding their pulls stays under 200 MB (about 50 MB of it live heap: a held request and its socket
 * are about 7 KB).
 */
const FLEET_NODE_FLAGS = ['--max-semi-space-size=1'];

/** Open files a process of this machine may have at most (`ulimit -Hn`), or null when unlimited. */
export function openFileHardLimit(): number | null {
  const text = execFileSync('sh', ['-c', 'ulimit -H -n'], { encoding: 'utf8' }).trim();
  return /^\d+$/.test(text) ? Number(text) : null;
}

/**
 * The source address of fleet process `index`'s pulls to a relay on 127.0.0.1: 127.0.0.2, .3, …
 * (Linux answers on all of 127/8), so that each process has its own ephemeral ports. One address
 * has about 28,000 of them towards the relay's port, and a phase's closed connections keep theirs
 * for a minute (TIME_WAIT) while the next phase opens 20,000 more. Null for any other relay host.
 */
function loopbackSource(url: string, index: number): string | null {
  return new URL(url).hostname === '127.0.0.1' ? `127.0.0.${2 + index}` : null;
}

/** One child process of the fleet: its IPC answers awaited by the op they carry. */
class FleetProcess {
  readonly #child: ChildProcess;
  readonly #waiting = new Map<string, { resolve: (message: FromFleetProcess) => void; reject: (error: Error) => void }>();
  #gone: Error | null = null;
  hosts: Array<[string, string]> = [];
  running = 0;

  constructor(onItems: (ids: string[], at: number) => void) {
    // Node raises its soft open-file limit to the hard one as it starts: each process may hold `ulimit -Hn` sockets
    this.#child = fork(FLEET_SCRIPT, [], {
      execArgv: ['--disable-warning=ExperimentalWarning', ...FLEET_NODE_FLAGS],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#child.on('message', (message: FromFleetProcess) => {
      if (message.op === 'items') onItems(message.ids, message.at);
      else if (message.op === 'failed') this.#fail(new Error(`a fleet process failed: ${message.reason}`));
      else {
        this.#waiting.get(message.op)?.resolve(message);
        this.#waiting.delete(message.op);
      }
    });
    this.#child.on('exit', (code, signal) => this.#fail(new Error(`a fleet process exited (${code ?? signal})`)));
  }

  #fail(error: Error): void {
    this.#gone ??= error;
    for (const waiter of this.#waiting.values()) waiter.reject(error);
    this.#waiting.clear();
  }

  ask<Op extends FromFleetProcess['op']>(message: ToFleetProcess, answer: Op): Promise<Extract<FromFleetProcess, { op: Op }>> {
    if (this.#gone !== null) return Promise.reject(this.#gone);
    return new Promise((resolve, reject) => {
      this.#waiting.set(answer, { resolve: resolve as (message: FromFleetProcess) => void, reject });
      this.#child.send(message);
    });
  }

  close(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.#child.once('exit', () => resolve());
      this.#child.kill('SIGKILL');
    });
  }
}

export interface FleetCounts {
  pulls: number;
  failures: number;
  causes: FailureCauses;
  /** each fleet process's resident set size, bytes */
  processRssBytes: number[];
}

/** A host of the fleet as a sender addresses it. */
export interface FleetTarget {
  name: string;
  publicKey: string;
}

/** The fleet's hosts, spread over its processes; `onItems` hears what each pull answer brought (and when, by sharedClockMs). */
export class Fleet {
  readonly #processes: FleetProcess[];
  onItems: (ids: string[], at: number) => void = () => {};

  private constructor(processes: FleetProcess[]) {
    this.#processes = processes;
  }

  /** Starts ceil(count / perProcess) processes and enrols `count` hosts on the relay at `url`, spread evenly over them. */
  static async enrol(url: string, count: number, perProcess = FLEET_HOSTS_PER_PROCESS): Promise<Fleet> {
    const processCount = Math.max(1, Math.ceil(count / perProcess));
    const fleet = new Fleet([]);
    for (let p = 0; p < processCount; p += 1) fleet.#processes.push(new FleetProcess((ids, at) => fleet.onItems(ids, at)));
    try {
      await Promise.all(
        fleet.#processes.map(async (proc, p) => {
          const share = Math.floor(count / processCount) + (p < count % processCount ? 1 : 0);
          const localAddress = loopbackSource(url, p);
          proc.hosts = (
            await proc.ask({ op: 'enrol', url, prefix: `fleet-${p}-`, count: share, ...(localAddress === null ? {} : { localAddress }) }, 'enrolled')
          ).hosts;
        }),
      );
    } catch (error) {
      await fleet.close();
      throw error;
    }
    return fleet;
  }

  get size(): number {
    return this.#processes.reduce((total, proc) => total + proc.hosts.length, 0);
  }

  /** The hosts whose pulls run now. */
  runningTargets(): FleetTarget[] {
    return this.#processes.flatMap((proc) => proc.hosts.slice(0, proc.running).map(([name, publicKey]) => ({ name, publicKey })));
  }

  /** Runs the pulls of `hosts` hosts (an even share of each process), held or polling. */
  async run(mode: PullMode, hosts: number): Promise<void> {
    const count = this.#processes.length;
    await Promise.all(
      this.#processes.map(async (proc, p) => {
        proc.running = Math.min(proc.hosts.length, Math.floor(hosts / count) + (p < hosts % count ? 1 : 0));
        await proc.ask({ op: 'run', mode, hosts: proc.running, waitS: HELD_WAIT_S, pollMs: POLL_INTERVAL_MS }, 'running');
      }),
    );
  }

  async counts(): Promise<FleetCounts> {
    const answers = await Promise.all(this.#processes.map((proc) => proc.ask({ op: 'count' }, 'count')));
    const causes: FailureCauses = {};
    for (const answer of answers) for (const [cause, n] of Object.entries(answer.causes)) causes[cause] = (causes[cause] ?? 0) + n;
    return {
      pulls: answers.reduce((t, a) => t + a.pulls, 0),
      failures: answers.reduce((t, a) => t + a.failures, 0),
      causes,
      processRssBytes: answers.map((a) => a.rssBytes),
    };
  }

  /** Aborts every pull out (their connections close: the relay drops them at once) and stops re-issuing. */
  async stop(): Promise<void> {
    await Promise.all(
      this.#processes.map(async (proc) => {
        await proc.ask({ op: 'stop' }, 'stopped');
        proc.running = 0;
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.#processes.map((proc) => proc.close()));
  }
}

export interface IdleFleetResult {
  hosts: number;
  mode: PullMode;
  seconds: number;
  /** the relay's CPU over the phase, % of one core (all its processes and threads) */
  relayCpuPercent: number;
  /** the relay's resident memory at the end, summed over its processes, bytes */
  relayRssBytes: number;
  /** the same, each process's proportional share of the pages it shares (PSS), summed, bytes */
  relayPssBytes: number;
  /** the same, private pages and the shared ones counted once (RelayChild.residentOnceBytes), bytes */
  relayOnceBytes: number;
  /** the whole machine's CPU over the phase, % of one core */
  machineBusyPercent: number;
  /** held pulls the relay reported when the measurement started (held mode) */
  heldAtStart: number | null;
  pulls: number;
  /** pulls that failed (over the whole phase, settling included) and why */
  failures: number;
  causes: FailureCauses;
  /** the load generator: each fleet process's resident set size at the end, bytes */
  fleetProcessRssBytes: number[];
}

export interface WakeResult {
  items: number;
  /** items whose held pull did not answer within WAKE_ANSWER_TIMEOUT_MS (counted as infinitely late) */
  unanswered: number;
  /** pushes the relay did not accept, by HTTP status (left out of the timing) */
  refused: string[];
  p50Ms: number;
  p99Ms: number;
}

async function waitForHeld(relay: RelayChild, hosts: number): Promise<number> {
  const deadline = Date.now() + HELD_SETTLE_TIMEOUT_MS;
  // the first pulls start spread over one wait, and from then on some are always being re-issued
  await sleep(HELD_WAIT_S * 1000);
  let held = await relay.heldPulls();
  while (held < hosts * HELD_SETTLED_SHARE && Date.now() < deadline) {
    await sleep(500);
    held = await relay.heldPulls();
  }
  return held;
}

/**
 * Runs `hosts` hosts of the fleet idle (held or polling) for `seconds`, once the relay holds every
 * pull (held) or every host has pulled once (polling), and measures the relay. The pulls keep
 * running after it: `fleet.stop()` ends them.
 */
export async function idleFleetPhase(relay: RelayChild, fleet: Fleet, mode: PullMode, hosts: number, seconds: number, cores: number): Promise<IdleFleetResult> {
  const before = await fleet.counts();
  await fleet.run(mode, hosts);
  let heldAtStart: number | null = null;
  if (mode === 'held') heldAtStart = await waitForHeld(relay, hosts);
  // polling: every host pulls once in the first interval; held: the last answers' garbage collected
  await sleep(mode === 'held' ? 2_000 : POLL_INTERVAL_MS + 1_000);
  const cpuBefore = relay.cpuMs();
  const machineBefore = sampleMachineCpu();
  const pullsBefore = (await fleet.counts()).pulls;
  const started = Date.now();
  await sleep(seconds * 1000);
  const elapsedMs = Date.now() - started;
  const cpuMs = relay.cpuMs() - cpuBefore;
  const machine = machineBusyPercent(machineBefore, sampleMachineCpu(), cores);
  const after = await fleet.counts();
  const causes: FailureCauses = {};
  for (const [cause, n] of Object.entries(after.causes)) if (n > (before.causes[cause] ?? 0)) causes[cause] = n - (before.causes[cause] ?? 0);
  return {
    hosts,
    mode,
    seconds: elapsedMs / 1000,
    relayCpuPercent: (100 * cpuMs) / elapsedMs,
    relayRssBytes: relay.rssBytes(),
    relayPssBytes: relay.pssBytes(),
    relayOnceBytes: relay.residentOnceBytes(),
    machineBusyPercent: machine,
    heldAtStart,
    pulls: after.pulls - pullsBefore,
    failures: after.failures - before.failures,
    causes,
    fleetProcessRssBytes: after.processRssBytes,
  };
}

/**
 * With the fleet holding its pulls: `items` single-item pushes from `sender`, one at a time, each to
 * a random host of those running; the latency of each is from its accept (the push's answer, here)
 * to the held pull's answer carrying it (in a fleet process; 0 when that answer came first). The
 * items are built before the first push.
 */
/** `file`: one line per accepted push, "<ms after the first accept> <ms from accept to answer, or Infinity>". */
function writeWakeTrace(file: string, acceptedAt: ReadonlyMap<string, number>, answeredAt: ReadonlyMap<string, number>): void {
  const first = Math.min(...acceptedAt.values());
  const lines = [...acceptedAt].map(([id, at]) => `${(at - first).toFixed(0)} ${((answeredAt.get(id) ?? Number.POSITIVE_INFINITY) - at).toFixed(1)}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
}

export async function wakePhase(fleet: Fleet, sender: Host, items: number): Promise<WakeResult> {
  const targets = fleet.runningTargets();
  if (targets.length === 0) throw new Error('the wake phase needs a fleet holding its pulls');
  // the relay checks a sealed envelope's shape, not whom it was sealed to: one enc key serves every target
  const enc = { publicKey: generateEncKeyPair().publicKey };
  const makers = new Map<string, () => { item: unknown }>();
  const pushes = Array.from({ length: items }, () => {
    const target = targets[Math.floor(Math.random() * targets.length)] as FleetTarget;
    let make = makers.get(target.name);
    if (make === undefined) {
      make = itemMaker(sender, { ...target, enc } satisfies ItemTarget);
      makers.set(target.name, make);
    }
    const { item } = make();
    return { id: (item as { item_id: string }).item_id, call: sender.api.preparePush([item]) };
  });
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
  // a push the relay refused is counted and left out of the timing (the table says how many and why), not a crash of the bench
  const refused = new Map<number, number>();
  for (const { id, call } of pushes) {
    const answer = await sender.api.send(call);
    if (answer.status === 200) acceptedAt.set(id, sharedClockMs());
    else refused.set(answer.status, (refused.get(answer.status) ?? 0) + 1);
  }
  const timeout = new AbortController();
  await Promise.race([done, sleep(WAKE_ANSWER_TIMEOUT_MS, undefined, { signal: timeout.signal }).catch(() => {})]);
  timeout.abort();
  fleet.onItems = () => {};
  const trace = process.env['BENCH_WAKE_TRACE'];
  if (trace !== undefined) writeWakeTrace(trace, acceptedAt, answeredAt);
  const latencies = [...acceptedAt].map(([id, at]) => Math.max(0, (answeredAt.get(id) ?? Number.POSITIVE_INFINITY) - at)).sort((a, b) => a - b);
  return {
    items: latencies.length,
    unanswered: latencies.filter((l) => l === Number.POSITIVE_INFINITY).length,
    refused: [...refused].map(([status, count]) => `${count} answered ${status}`),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}
