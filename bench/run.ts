// `npm run bench` (issues 7 and 17): measures this machine's ceilings, the floor of one push, and
// each relay setup of RELAY_SETUPS under the same load in one run; prints a table of every figure
// beside its ratio to the matching ceiling, floor or target, and writes bench/results.json. A
// benchmark, not a test: nothing here fails on a missed target.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureCeilings, type Ceilings } from './ceilings.ts';
import { measureFloor, type Floor } from './floor.ts';
import { alternatingPushPhases, enrolHost, ITEM_WIRE_BYTES, pullAckPhase, pushPhase, type Host, type PhaseResult } from './load.ts';
import { machineBusyPercent, sampleMachineCpu } from './machine-cpu.ts';
import { measurePostgres, startRelayOnPostgres } from './postgres.ts';
import { BENCH_SETTINGS, startRelayChild, type ProcessRss, type RelayChild } from './relay-child.ts';
import { Table, type CpuPerItem } from './table.ts';
import { FLEET_HOSTS_PER_PROCESS, Fleet, idleFleetPhase, openFileHardLimit, wakePhase, type IdleFleetResult, type WakeResult } from './held-pulls.ts';

const PHASE_SECONDS = 3;
const WARM_UP_SECONDS = 3;
const CEILING_BUDGET_MS = 1_000;
/** Rows each PostgreSQL level inserts: at about 10,000/s on a fast disk, a second or more, so that psql start-up weighs little. */
const POSTGRES_INSERTS_PER_LEVEL = 12_000;
const DEEP_QUEUE = 10_000;
/** Turns taken between the empty and the deep queue (each side gets 2 × PHASE_SECONDS in all). */
const DEPTH_ROUNDS = 4;
/** Items built and signed before each measured push phase starts (more than any phase here pushes in PHASE_SECONDS). */
const PREBUILT_ITEMS = 15_000;
const BIG_QUEUE = 100_000;
/** Items the memory phase queues (BENCH_MEMORY_QUEUED lowers it for a smoke run; the 200 MB target is for BIG_QUEUE). */
const MEMORY_QUEUED = Number(process.env['BENCH_MEMORY_QUEUED'] ?? BIG_QUEUE);
const SINGLE_LEVELS = [1, 8, 32] as const;
const BATCH_SENDERS = 8;
const MiB = 1024 * 1024;
const RSS_TARGET_BYTES = 200 * 1_000_000;
const CORES = availableParallelism();
/** Hosts of the idle fleet holding their pulls (issue 30's target: 20,000; BENCH_FLEET lowers it for a smoke run) and of the smaller fleet (4,000), held and polling. */
const FLEET = Number(process.env['BENCH_FLEET'] ?? 20_000);
const SMALL_FLEET = Math.min(FLEET, Number(process.env['BENCH_SMALL_FLEET'] ?? 4_000));
/** Hosts per fleet process (BENCH_FLEET_PER_PROCESS: a smoke run's small fleet in several processes too). */
const FLEET_PER_PROCESS = Number(process.env['BENCH_FLEET_PER_PROCESS'] ?? FLEET_HOSTS_PER_PROCESS);
const FLEET_SECONDS = Number(process.env['BENCH_FLEET_SECONDS'] ?? 20);
const WAKE_ITEMS = Number(process.env['BENCH_WAKE_ITEMS'] ?? 1_000);
/** The setups the held-pull phases run on (issue 30). */
const HELD_SETUPS = new Set(['sqlite-1', 'sqlite-n', 'postgres-2']);
/** The setups whose memory is measured on a fresh relay: `relay serve` on SQLite, as an operator starts it (issue 30). */
const MEMORY_SETUPS = new Set(['sqlite-1', 'sqlite-n']);
/** How long the fresh relay idles before its RSS is read a second time (BENCH_IDLE_SECONDS). */
const IDLE_SECONDS = Number(process.env['BENCH_IDLE_SECONDS'] ?? 30);
const IDLE_TARGET_BYTES = 150 * 1_000_000;

/**
 * One relay configuration measured with every phase below, side by side with the others: SQLite with
 * 1 and N workers, PostgreSQL (a throwaway cluster, synchronous_commit and fsync on) with 1 and 2
 * relay processes; comparisons between setups are made in `compare` below by key.
 */
interface RelaySetup {
  key: string;
  label: string;
  /** its processes that serve HTTP (each holds its share of the held pulls' sockets) */
  httpProcesses: number;
  start(dir: string): Promise<RelayChild>;
}

const RELAY_SETUPS: RelaySetup[] = [
  { key: 'sqlite-1', label: 'SQLite, --workers 1', httpProcesses: 1, start: (dir) => startRelayChild(dir, BENCH_SETTINGS, 1) },
  { key: 'sqlite-n', label: `SQLite, --workers ${CORES}`, httpProcesses: CORES, start: (dir) => startRelayChild(dir, BENCH_SETTINGS, CORES) },
  { key: 'postgres-1', label: 'PostgreSQL, 1 relay process', httpProcesses: 1, start: (dir) => startRelayOnPostgres(dir, 1) },
  { key: 'postgres-2', label: 'PostgreSQL, 2 relay processes', httpProcesses: 2, start: (dir) => startRelayOnPostgres(dir, 2) },
];

interface HeldResult {
  /** the fleet held on this setup: FLEET, or less when FLEET pulls do not fit its processes' open-file limit (`limitNote` says so) */
  fleet: number;
  limitNote: string | null;
  held: IdleFleetResult;
  smallHeld: IdleFleetResult;
  smallPolling: IdleFleetResult;
  wake: WakeResult;
}

/** Open files a relay process keeps besides its held pulls' sockets (its store, pipes, threads), with room to spare. */
const RELAY_FD_HEADROOM = 1_000;

/**
 * The held fleet `setup` can take on this machine: each of its HTTP processes holds one socket per
 * held pull and may open at most `ulimit -Hn` files (Node raises its soft limit to that as it starts),
 * and holds at most its cap (`relayLimit`, the group's sum, from each process's heap); FLEET pulls on
 * too few processes are cut to what fits, in thousands, and the note says so.
 */
function heldFleetFor(setup: RelaySetup, relayLimit: number): { fleet: number; limitNote: string | null } {
  const hardLimit = openFileHardLimit();
  const byFiles = hardLimit === null ? Number.POSITIVE_INFINITY : Math.floor(((hardLimit - RELAY_FD_HEADROOM) * setup.httpProcesses) / 1000) * 1000;
  const byCap = Math.floor(relayLimit / 1000) * 1000;
  if (FLEET <= Math.min(byFiles, byCap)) return { fleet: FLEET, limitNote: null };
  const processes = `${setup.httpProcesses} relay process${setup.httpProcesses === 1 ? '' : 'es'}`;
  return byCap <= byFiles
    ? {
        fleet: byCap,
        limitNote: `${FLEET} held pulls on ${processes} is above its held-pull cap (${relayLimit}, from each process's heap): measured with ${byCap}`,
      }
    : {
        fleet: byFiles,
        limitNote: `${FLEET} held pulls on ${processes} is above this machine's open-file limit (ulimit -Hn ${hardLimit} per process): measured with ${byFiles}`,
      };
}

/**
 * Issue 30's phases on a fresh relay of `setup`, with a fleet of FLEET hosts (heldFleetFor) enrolled
 * from child processes (held-pulls.ts): SMALL_FLEET hosts polling every 2 s, then holding; the whole
 * fleet holding; then single-item pushes to random held hosts, timed from accept to the held pull's
 * answer. Each phase's pulls end (their connections closed) before the next starts.
 */
async function measureHeld(setup: RelaySetup, dir: string): Promise<HeldResult> {
  const relay = await setup.start(dir);
  let fleet: Fleet | null = null;
  try {
    const { fleet: fleetSize, limitNote } = heldFleetFor(setup, await relay.heldPullsLimit());
    if (limitNote !== null) log(`${setup.label}: ${limitNote}`);
    const small = Math.min(SMALL_FLEET, fleetSize);
    log(`${setup.label}: enrolling ${fleetSize} fleet hosts from ${Math.ceil(fleetSize / FLEET_PER_PROCESS)} processes`);
    fleet = await Fleet.enrol(relay.url, fleetSize, FLEET_PER_PROCESS);
    const sender = await enrolHost(relay.url, 'wake-sender');
    log(`${setup.label}: idle fleet, ${small} hosts polling every 2 s, ${FLEET_SECONDS} s`);
    const smallPolling = await idleFleetPhase(relay, fleet, 'polling', small, FLEET_SECONDS, CORES);
    await fleet.stop();
    log(`${setup.label}: idle fleet, ${small} hosts holding their pulls, ${FLEET_SECONDS} s`);
    const smallHeld = await idleFleetPhase(relay, fleet, 'held', small, FLEET_SECONDS, CORES);
    await fleet.stop();
    log(`${setup.label}: idle fleet, ${fleetSize} hosts holding their pulls, ${FLEET_SECONDS} s`);
    const held = await idleFleetPhase(relay, fleet, 'held', fleetSize, FLEET_SECONDS, CORES);
    log(`${setup.label}: wake, ${WAKE_ITEMS} single-item pushes to random held hosts`);
    const wake = await wakePhase(fleet, sender, WAKE_ITEMS);
    await fleet.stop();
    return { fleet: fleetSize, limitNote, held, smallHeld, smallPolling, wake };
  } finally {
    await fleet?.close();
    await relay.stop();
  }
}

function heldTable(table: Table, setup: RelaySetup, result: HeldResult): void {
  table.section(`${setup.label}: held pulls (issue 30; machine busy is the whole machine, load generator included)`);
  if (result.limitNote !== null) table.note(`  ${result.limitNote}`);
  const fleetRow = (what: string, fleet: IdleFleetResult, targetPercent: number | null): void => {
    table.row(
      `${fleet.hosts} hosts ${what}: relay CPU (% of one core)`,
      fleet.relayCpuPercent,
      targetPercent,
      targetPercent === null ? '' : `÷ ${targetPercent} % target`,
      targetPercent === null
        ? undefined
        : { label: `≤ ${targetPercent} %`, ok: fleet.relayCpuPercent <= targetPercent, ratio: fleet.relayCpuPercent / targetPercent },
    );
    const held = fleet.heldAtStart === null ? '' : `; ${fleet.heldAtStart} held by the relay when measuring began`;
    const failed =
      fleet.failures === 0
        ? ''
        : `; ${fleet.failures} pulls failed (${Object.entries(fleet.causes)
            .map(([cause, n]) => `${cause} ×${n}`)
            .join(', ')})`;
    table.note(
      `  ${fleet.pulls} pulls answered in ${fleet.seconds.toFixed(1)} s${held}${failed}; machine busy ${fleet.machineBusyPercent.toFixed(0)} % of ${100 * CORES} %; relay RSS ${(fleet.relayRssBytes / MiB).toFixed(0)} MiB summed, PSS ${(fleet.relayPssBytes / MiB).toFixed(0)} MiB; load generator ${fleet.fleetProcessRssBytes.length} fleet processes of ${fleet.fleetProcessRssBytes.map((b) => (b / MiB).toFixed(0)).join(' / ')} MiB RSS`,
    );
  };
  fleetRow('polling every 2 s', result.smallPolling, null);
  fleetRow('holding their pulls', result.smallHeld, result.smallHeld.hosts >= 4_000 ? 3 : null);
  table.row(
    `  held ÷ polling, ${result.smallHeld.hosts} hosts (relay CPU)`,
    result.smallHeld.relayCpuPercent,
    result.smallPolling.relayCpuPercent,
    '÷ polling',
  );
  // the 20,000-host targets, also where the open-file limit cut the fleet (the note above says so)
  const bigTargets = FLEET >= 20_000;
  fleetRow('holding their pulls', result.held, bigTargets ? 10 : null);
  const memoryRow = (figure: string, bytes: number): void => {
    table.row(
      `${result.held.hosts} hosts holding: relay ${figure} (MiB)`,
      bytes / MiB,
      bigTargets ? 500 : null,
      bigTargets ? '÷ 500 MB target' : '',
      bigTargets ? { label: '≤ 500 MB', ok: bytes <= 500 * 1_000_000, ratio: bytes / (500 * 1_000_000) } : undefined,
    );
  };
  memoryRow('RSS of every process, summed', result.held.relayRssBytes);
  memoryRow('PSS of every process, summed', result.held.relayPssBytes);
  memoryRow('private pages, and shared ones counted once', result.held.relayOnceBytes);
  const { wake } = result;
  if (wake.refused.length > 0) table.note(`  pushes refused by the relay (left out of the timing): ${wake.refused.join(', ')}`);
  if (wake.unanswered > 0) table.note(`  ${wake.unanswered} of ${wake.items} pushed items were not answered to their held pull within 30 s`);
  table.row(`accept → held pull answer, p50 of ${wake.items} pushes to random held hosts (ms)`, wake.p50Ms, 5, '÷ 5 ms target', {
    label: '≤ 5 ms',
    ok: wake.p50Ms <= 5,
    ratio: wake.p50Ms / 5,
  });
  table.row('accept → held pull answer, p99 (ms)', wake.p99Ms, 50, '÷ 50 ms target', { label: '≤ 50 ms', ok: wake.p99Ms <= 50, ratio: wake.p99Ms / 50 });
}

interface MemoryResult {
  /** each process right after the relay said it listens, empty store */
  idleAtStart: ProcessRss[];
  idleAtStartOnceBytes: number;
  /** each process after IDLE_SECONDS more of idling */
  idleLater: ProcessRss[];
  idleLaterOnceBytes: number;
  /** each process once MEMORY_QUEUED items are queued (RSS now and its peak) */
  queued: ProcessRss[];
}

/**
 * The relay's memory on a fresh relay of `setup`: idle on an empty store right after start and
 * IDLE_SECONDS later, then with MEMORY_QUEUED items queued (100-item batches from 8 senders). A first
 * start and stop comes before, as on an operator's machine where the relay has run once since its
 * upgrade: bin/agentmbx keeps Node's compile cache, without which every process also holds the
 * TypeScript stripper (about 15 MB each).
 */
async function measureMemory(setup: RelaySetup, dir: string): Promise<MemoryResult> {
  const warmDir = join(dir, 'first-start');
  const measuredDir = join(dir, 'measured');
  mkdirSync(warmDir);
  mkdirSync(measuredDir);
  await (await setup.start(warmDir)).stop();
  const relay = await setup.start(measuredDir);
  try {
    const idleAtStart = relay.peakRssPerProcess();
    const idleAtStartOnceBytes = relay.residentOnceBytes();
    log(`${setup.label}: memory, idle ${IDLE_SECONDS} s on an empty store`);
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
    const idleLater = relay.peakRssPerProcess();
    const idleLaterOnceBytes = relay.residentOnceBytes();
    log(`${setup.label}: memory, filling one queue to ${MEMORY_QUEUED} items`);
    const senders: Host[] = [];
    for (let i = 0; i < 8; i += 1) senders.push(await enrolHost(relay.url, `memory-sender-${i}`));
    await pushPhase(senders, await enrolHost(relay.url, 'memory-big'), { batch: 100, seconds: 600, maxItems: MEMORY_QUEUED });
    return { idleAtStart, idleAtStartOnceBytes, idleLater, idleLaterOnceBytes, queued: relay.peakRssPerProcess() };
  } finally {
    await relay.stop();
  }
}

function memoryTable(table: Table, setup: RelaySetup, result: MemoryResult): void {
  table.section(`${setup.label}: memory (issue 30; relay serve through bin/agentmbx, fresh relay, /proc/<pid>/status and smaps_rollup)`);
  const sum = (processes: ProcessRss[], field: 'rssBytes' | 'pssBytes'): number => processes.reduce((total, p) => total + p[field], 0);
  for (const proc of result.idleLater)
    table.note(`  idle, ${proc.role} pid ${proc.pid}: RSS ${(proc.rssBytes / MiB).toFixed(1)} MiB, PSS ${(proc.pssBytes / MiB).toFixed(1)} MiB`);
  table.note("  RSS counts Node's code (about 55 MiB, mapped once by the kernel) in every process; PSS splits each shared page between the");
  table.note('  processes that map it, so summed over the group it counts that code once, less its share in other Node processes of this');
  table.note('  machine (the bench itself); "counted once" is every private page plus the shared pages of the process that has most');
  const idleRows: Array<[string, number]> = [
    ['idle relay, empty store, right after start: RSS of every process, summed (MiB)', sum(result.idleAtStart, 'rssBytes')],
    [`idle relay, empty store, ${IDLE_SECONDS} s later: RSS of every process, summed (MiB)`, sum(result.idleLater, 'rssBytes')],
    ['  the same: PSS of every process, summed (MiB)', sum(result.idleLater, 'pssBytes')],
    ['  the same: private pages, and shared ones counted once (MiB)', result.idleLaterOnceBytes],
  ];
  for (const [figure, bytes] of idleRows) {
    table.row(figure, bytes / MiB, IDLE_TARGET_BYTES / MiB, '÷ 150 MB target', {
      label: '≤ 150 MB',
      ok: bytes <= IDLE_TARGET_BYTES,
      ratio: bytes / IDLE_TARGET_BYTES,
    });
  }
  for (const proc of result.queued) {
    table.row(
      `RSS with ${MEMORY_QUEUED} items queued, ${proc.role} pid ${proc.pid} (MiB; peak ${(proc.peakRssBytes / MiB).toFixed(0)})`,
      proc.rssBytes / MiB,
      RSS_TARGET_BYTES / MiB,
      '÷ 200 MB target',
      { label: '≤ 200 MB', ok: proc.peakRssBytes <= RSS_TARGET_BYTES, ratio: proc.peakRssBytes / RSS_TARGET_BYTES },
    );
  }
}

interface SetupResult {
  single: Record<number, PhaseResult>;
  batches: PhaseResult;
  intoEmpty: PhaseResult;
  intoDeep: PhaseResult;
  pullAck: PhaseResult;
  bytesWrittenPerItemAt32: number;
  peakRssWith100kQueued: ProcessRss[];
  cpuPerItem: Record<string, CpuPerItem>;
  /** the whole machine's CPU use during each phase, % of one core */
  machineBusy: Record<string, number>;
  /** mean transactions per COMMIT (a lone relay's; a group's workers each have their own) */
  meanGroupSize: Record<string, number>;
}

const log = (line: string): void => {
  process.stderr.write(`bench: ${line}\n`);
};

async function measureSetup(setup: RelaySetup, dir: string): Promise<SetupResult> {
  const relay = await setup.start(dir);
  try {
    const senders: Host[] = [];
    for (let i = 0; i < 32; i += 1) senders.push(await enrolHost(relay.url, `sender-${i}`));
    const receiver = (name: string): Promise<Host> => enrolHost(relay.url, name);
    const lone = relay.pids().length === 1;
    const cpuPerItem: Record<string, CpuPerItem> = {};
    const machineBusy: Record<string, number> = {};
    const meanGroupSize: Record<string, number> = {};
    /** runs one phase, charging its CPU (relay, load generator, machine) and commit groups to `figure` */
    const measured = async (figure: string, run: () => Promise<PhaseResult>): Promise<PhaseResult> => {
      const groupsBefore = lone ? await relay.groups() : null;
      const machineBefore = sampleMachineCpu();
      const before = { all: relay.cpuMs(), main: relay.mainThreadCpuMs() };
      const result = await run();
      cpuPerItem[figure] = {
        relayMs: (relay.cpuMs() - before.all) / result.items,
        relayMainThreadMs: (relay.mainThreadCpuMs() - before.main) / result.items,
        loadGeneratorMs: result.loadCpuMs / result.items,
        itemsPerSecond: result.itemsPerSecond,
      };
      machineBusy[figure] = machineBusyPercent(machineBefore, sampleMachineCpu(), CORES);
      if (groupsBefore !== null) {
        const after = await relay.groups();
        meanGroupSize[figure] = (after.members - groupsBefore.members) / (after.count - groupsBefore.count);
      }
      return result;
    };
    // a relay in service has its hot paths compiled: the first measured phase must not pay for that
    log(`${setup.label}: warm-up, ${WARM_UP_SECONDS} s of single-item pushes from 8 senders (not measured)`);
    await pushPhase(senders.slice(0, 8), await receiver('warm-up'), { batch: 1, seconds: WARM_UP_SECONDS });
    const single: Record<number, PhaseResult> = {};
    let bytesWrittenPerItemAt32 = Number.NaN;
    for (const level of SINGLE_LEVELS) {
      log(`${setup.label}: single-item pushes, ${level} concurrent senders`);
      const target = await receiver(`single-${level}`);
      const written = relay.writeBytes();
      single[level] = await measured(`single-item pushes, ${level} sender(s)`, () =>
        pushPhase(senders.slice(0, level), target, { batch: 1, seconds: PHASE_SECONDS, prebuiltItems: PREBUILT_ITEMS }),
      );
      if (level === 32) bytesWrittenPerItemAt32 = (relay.writeBytes() - written) / single[level].items;
    }
    log(`${setup.label}: 100-item batches, ${BATCH_SENDERS} concurrent senders`);
    const batchTarget = await receiver('batches');
    const batches = await measured('100-item batches', () =>
      pushPhase(senders.slice(0, BATCH_SENDERS), batchTarget, { batch: 100, seconds: PHASE_SECONDS, prebuiltItems: PREBUILT_ITEMS }),
    );
    log(
      `${setup.label}: queue depth: filling one queue with ${DEEP_QUEUE} items, then single-item pushes (8 senders) into empty queues and the deep one, in turns`,
    );
    const deep = await receiver('deep');
    await pushPhase(senders.slice(0, 8), deep, { batch: 100, seconds: 600, maxItems: DEEP_QUEUE });
    // in turns, each empty run into a fresh queue, so that the machine's drift hits both sides alike
    let emptyQueues = 0;
    const { a: intoEmpty, b: intoDeep } = await alternatingPushPhases(
      senders.slice(0, 8),
      {
        a: () => {
          emptyQueues += 1;
          return receiver(`empty-${emptyQueues}`);
        },
        b: async () => deep,
      },
      DEPTH_ROUNDS,
      { batch: 1, seconds: 2 * PHASE_SECONDS, prebuiltItems: PREBUILT_ITEMS },
    );
    log(`${setup.label}: filling one queue to ${BIG_QUEUE} items for the RSS figure`);
    const big = await receiver('big');
    await pushPhase(senders.slice(0, 8), big, { batch: 100, seconds: 600, maxItems: BIG_QUEUE });
    const peakRssWith100kQueued = relay.peakRssPerProcess();
    log(`${setup.label}: pull + ack of the ${BIG_QUEUE}-item queue, pages of 500`);
    const pullAck = await measured('pull + ack', () => pullAckPhase(big, 500));
    return { single, batches, intoEmpty, intoDeep, pullAck, bytesWrittenPerItemAt32, peakRssWith100kQueued, cpuPerItem, machineBusy, meanGroupSize };
  } finally {
    await relay.stop();
  }
}

function setupTable(table: Table, setup: RelaySetup, result: SetupResult, ceilings: Ceilings, floor: Floor): void {
  const batchCeiling = Math.min(ceilings.sqliteHundredRowsPerCommit, ceilings.ed25519SignsPerSecond);
  table.section(`${setup.label} (child processes, every answer after the durable commit of its item)`);
  for (const level of SINGLE_LEVELS) {
    const phase = result.single[level] as PhaseResult;
    table.row(
      `single-item pushes, ${level} sender${level === 1 ? '' : 's'} (items/s)`,
      phase.itemsPerSecond,
      ceilings.sqliteOneRowPerCommit,
      '÷ 1-row ceiling',
    );
    table.latency('  latency p50 / p99 (ms)', phase.p50Ms, phase.p99Ms, 1000 / ceilings.sqliteOneRowPerCommit);
  }
  table.row(`100-item batches, ${BATCH_SENDERS} senders (items/s)`, result.batches.itemsPerSecond, batchCeiling, '÷ min(100-row, sign)', {
    label: '≥ 0.5 × ceiling',
    ok: result.batches.itemsPerSecond >= 0.5 * batchCeiling,
    ratio: result.batches.itemsPerSecond / batchCeiling,
  });
  table.latency('  latency p50 / p99 (ms, per 100-item request)', result.batches.p50Ms, result.batches.p99Ms, 1000 / ceilings.sqliteOneRowPerCommit);
  table.row(
    `single-item pushes into an empty queue, 8 senders, ${DEPTH_ROUNDS} turns (items/s)`,
    result.intoEmpty.itemsPerSecond,
    ceilings.sqliteOneRowPerCommit,
    '÷ 1-row ceiling',
  );
  table.row(
    `single-item pushes into a ${DEEP_QUEUE}-item queue, 8 senders, in turns with it (items/s)`,
    result.intoDeep.itemsPerSecond,
    result.intoEmpty.itemsPerSecond,
    '÷ empty queue',
    {
      label: '≥ 0.9 × empty',
      ok: result.intoDeep.itemsPerSecond >= 0.9 * result.intoEmpty.itemsPerSecond,
      ratio: result.intoDeep.itemsPerSecond / result.intoEmpty.itemsPerSecond,
    },
  );
  table.row('pull + ack, pages of 500 (items/s)', result.pullAck.itemsPerSecond, ceilings.sqliteHundredRowsPerCommit, '÷ 100-row ceiling', {
    label: '≥ 20,000/s',
    ok: result.pullAck.itemsPerSecond >= 20_000,
    ratio: result.pullAck.itemsPerSecond / 20_000,
  });
  table.row(`bytes written to disk per accepted item (${ITEM_WIRE_BYTES}-byte wire), 32 senders`, result.bytesWrittenPerItemAt32, 8 * 1024, '÷ 8 KiB target', {
    label: '≤ 8 KiB',
    ok: result.bytesWrittenPerItemAt32 <= 8 * 1024,
    ratio: result.bytesWrittenPerItemAt32 / (8 * 1024),
  });
  for (const proc of result.peakRssWith100kQueued) {
    table.row(
      `peak RSS with ${BIG_QUEUE} items queued, ${proc.role} pid ${proc.pid} (MiB)`,
      proc.peakRssBytes / MiB,
      RSS_TARGET_BYTES / MiB,
      '÷ 200 MB target',
      { label: '< 200 MB', ok: proc.peakRssBytes < RSS_TARGET_BYTES, ratio: proc.peakRssBytes / RSS_TARGET_BYTES },
    );
  }
  const single32 = result.cpuPerItem['single-item pushes, 32 sender(s)'] as CpuPerItem;
  table.row('relay CPU per single-item push at 32 senders (ms)', single32.relayMs, floor.totalMs, '÷ floor', {
    label: '≤ 1.6 × floor',
    ok: single32.relayMs <= 1.6 * floor.totalMs,
    ratio: single32.relayMs / floor.totalMs,
  });
  table.section(`${setup.label}: CPU per item (user + system ms) of the relay and of the load generator beside it, and the machine's CPU use`);
  for (const [figure, cpu] of Object.entries(result.cpuPerItem)) {
    table.cpu(figure, cpu, CORES);
    table.note(`  machine busy ${(result.machineBusy[figure] ?? Number.NaN).toFixed(0)} % of ${100 * CORES} %`);
  }
  if (Object.keys(result.meanGroupSize).length > 0) {
    table.section(`${setup.label}: group commit, mean transactions per COMMIT`);
    for (const [figure, size] of Object.entries(result.meanGroupSize)) table.row(figure, size, null, '');
  }
}

/** The issue's targets between setups. */
function compare(table: Table, results: Map<string, SetupResult>): void {
  const many = results.get('sqlite-n');
  const onPostgres = results.get('postgres-2');
  if (many !== undefined && onPostgres !== undefined) {
    table.section(`PostgreSQL with 2 relay processes against SQLite --workers ${CORES} (same run)`);
    const pg = (onPostgres.single[32] as PhaseResult).itemsPerSecond;
    const ratio = pg / (many.single[32] as PhaseResult).itemsPerSecond;
    table.row(
      'single-item pushes, 32 senders, PostgreSQL 2 processes (items/s)',
      pg,
      (many.single[32] as PhaseResult).itemsPerSecond,
      `÷ SQLite --workers ${CORES}`,
      { label: '≥ 0.7 × SQLite', ok: ratio >= 0.7, ratio: ratio / 0.7 },
    );
  }
  const one = results.get('sqlite-1');
  if (one === undefined || many === undefined) return;
  const figure = 'single-item pushes, 32 sender(s)';
  table.section(`--workers ${CORES} against --workers 1 (same run)`);
  const ratio = (many.single[32] as PhaseResult).itemsPerSecond / (one.single[32] as PhaseResult).itemsPerSecond;
  table.row(
    `single-item pushes, 32 senders, --workers ${CORES} (items/s)`,
    (many.single[32] as PhaseResult).itemsPerSecond,
    (one.single[32] as PhaseResult).itemsPerSecond,
    '÷ --workers 1',
    { label: '≥ 1.6 × --workers 1', ok: ratio >= 1.6, ratio: ratio / 1.6 },
  );
  const busy = many.machineBusy[figure] ?? Number.NaN;
  table.row(`machine busy during it (% of one core, ${CORES} cores)`, busy, 100 * CORES, `÷ ${100 * CORES} %`, {
    label: '≥ 180 %',
    ok: busy >= 180,
    ratio: busy / 180,
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'agentmbx-bench-'));
  try {
    log(
      `working in ${dir} (same disk as the relay store would be); load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    log('ceilings: node:sqlite 1 row/commit, 100 rows/commit, Ed25519 signs and verifies');
    const ceilings = measureCeilings(dir, CEILING_BUDGET_MS);
    log('floor: one null-server HTTP exchange');
    const floor = await measureFloor(ceilings, 32, 1_500);
    log('PostgreSQL comparison');
    const postgres = await measurePostgres(dir, [8, 32], POSTGRES_INSERTS_PER_LEVEL);
    if (!postgres.available) log(postgres.reason);

    const only = process.env['BENCH_SETUPS']?.split(',');
    // BENCH_ONLY_HELD=1: only issue 30's held-pull phases (a smoke run); BENCH_ONLY_MEMORY=1: only the memory phase
    const onlyHeld = process.env['BENCH_ONLY_HELD'] === '1';
    const onlyMemory = process.env['BENCH_ONLY_MEMORY'] === '1';
    const results = new Map<string, SetupResult>();
    const heldResults = new Map<string, HeldResult>();
    const memoryResults = new Map<string, MemoryResult>();
    for (const setup of RELAY_SETUPS.filter((s) => only === undefined || only.includes(s.key))) {
      const setupDir = join(dir, setup.key);
      mkdirSync(setupDir);
      if (MEMORY_SETUPS.has(setup.key) && !onlyHeld) {
        const memoryDir = join(dir, `${setup.key}-memory`);
        mkdirSync(memoryDir);
        memoryResults.set(setup.key, await measureMemory(setup, memoryDir));
      }
      if (onlyMemory) continue;
      if (!onlyHeld) results.set(setup.key, await measureSetup(setup, setupDir));
      if (HELD_SETUPS.has(setup.key)) {
        const heldDir = join(dir, `${setup.key}-held`);
        mkdirSync(heldDir);
        heldResults.set(setup.key, await measureHeld(setup, heldDir));
      }
    }

    const table = new Table();
    table.section(`ceilings of this machine (same run; load average at the end ${loadavg()[0]?.toFixed(1)} on ${CORES} cores)`);
    table.row('node:sqlite, 1 row per commit (commits/s)', ceilings.sqliteOneRowPerCommit, null, '');
    table.row('node:sqlite, 100 rows per commit (rows/s)', ceilings.sqliteHundredRowsPerCommit, null, '');
    table.row('Ed25519 signs/s', ceilings.ed25519SignsPerSecond, null, '');
    for (const level of [8, 32]) {
      const value = postgres.available ? (postgres.insertsPerSecond[level] ?? null) : null;
      if (value !== null)
        table.row(`PostgreSQL ${level} sessions, 1-row INSERT … ON CONFLICT DO NOTHING (rows/s)`, value, ceilings.sqliteOneRowPerCommit, '÷ 1-row ceiling');
    }
    if (!postgres.available) table.note(`PostgreSQL: ${postgres.reason}`);
    table.section('the floor of one single-item push: CPU ms of the work no relay avoids (same run)');
    table.row('Ed25519 verify of the hop signature', floor.verifyMs, null, '');
    table.row('Ed25519 signature of the accept', floor.signMs, null, '');
    table.row('one HTTP exchange with a null server (its CPU, 32 keep-alive clients)', floor.httpExchangeMs, null, '');
    table.row('one 1 KiB row of a 100-row commit', floor.rowOfHundredMs, null, '');
    table.row('floor', floor.totalMs, null, '');
    for (const setup of RELAY_SETUPS) {
      const result = results.get(setup.key);
      if (result !== undefined) setupTable(table, setup, result, ceilings, floor);
      const memory = memoryResults.get(setup.key);
      if (memory !== undefined) memoryTable(table, setup, memory);
      const held = heldResults.get(setup.key);
      if (held !== undefined) heldTable(table, setup, held);
    }
    compare(table, results);
    process.stdout.write(table.render());

    const report = {
      at: new Date().toISOString(),
      node: process.version,
      cores: CORES,
      itemWireBytes: ITEM_WIRE_BYTES,
      ceilings,
      floor,
      postgres,
      setups: Object.fromEntries(
        RELAY_SETUPS.filter((s) => results.has(s.key) || heldResults.has(s.key) || memoryResults.has(s.key)).map((s) => [
          s.key,
          { label: s.label, ...results.get(s.key), held: heldResults.get(s.key), memory: memoryResults.get(s.key) },
        ]),
      ),
      loadAverage: loadavg(),
      targets: table.targets(),
    };
    writeFileSync(join(import.meta.dirname, 'results.json'), `${JSON.stringify(report, null, 2)}\n`);
    log('wrote bench/results.json');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
