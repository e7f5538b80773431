// `npm run bench` (issue 7): measures this machine's ceilings and the relay under load in one run,
// prints a table of every figure beside its ratio to the matching ceiling or target, and writes
// bench/results.json. A benchmark, not a test: nothing here fails on a missed target.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureCeilings } from './ceilings.ts';
import { alternatingPushPhases, enrolHost, ITEM_WIRE_BYTES, pullAckPhase, pushPhase, type Host, type PhaseResult } from './load.ts';
import { measurePostgres } from './postgres.ts';
import { startRelayChild } from './relay-child.ts';
import { Table, type CpuPerItem } from './table.ts';

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
const MiB = 1024 * 1024;

/** Limits out of the way: the bench measures throughput, not quotas or rate limits. */
const BENCH_SETTINGS = {
  pushes_per_minute: Number.MAX_SAFE_INTEGER, enrol_per_minute: 10_000, max_queue_items: 1_000_000, max_queue_bytes: 1e12,
  max_sender_items: 1_000_000, max_sender_bytes: 1e12,
};

const log = (line: string): void => { process.stderr.write(`bench: ${line}\n`); };

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'agentmbx-bench-'));
  try {
    log(`working in ${dir} (same disk as the relay store would be)`);
    log('ceilings: node:sqlite 1 row/commit, 100 rows/commit, Ed25519 signs');
    const ceilings = measureCeilings(dir, CEILING_BUDGET_MS);
    log('PostgreSQL comparison');
    const postgres = await measurePostgres(dir, [8, 32], POSTGRES_INSERTS_PER_LEVEL);
    if (!postgres.available) log(postgres.reason);

    const relay = await startRelayChild(dir, BENCH_SETTINGS);
    try {
      const senders: Host[] = [];
      for (let i = 0; i < 32; i += 1) senders.push(await enrolHost(relay.url, `sender-${i}`));
      const receiver = (name: string): Promise<Host> => enrolHost(relay.url, name);
      const push: Record<string, PhaseResult> = {};
      const cpuPerItem: Record<string, CpuPerItem> = {};
      const cpuOf = (result: PhaseResult, before: { all: number; main: number }): CpuPerItem => ({
        relayMs: (relay.cpuMs() - before.all) / result.items, relayMainThreadMs: (relay.mainThreadCpuMs() - before.main) / result.items,
        loadGeneratorMs: result.loadCpuMs / result.items, itemsPerSecond: result.itemsPerSecond,
      });
      const relayCpu = (): { all: number; main: number } => ({ all: relay.cpuMs(), main: relay.mainThreadCpuMs() });
      /** mean transactions per COMMIT in a phase (a push item is one; the health check and heartbeat add a few) */
      const groupSizes: Record<string, number> = {};
      // a relay in service has its hot paths compiled: the first measured phase must not pay for that
      log(`warm-up: ${WARM_UP_SECONDS} s of single-item pushes from 8 senders (not measured)`);
      await pushPhase(senders.slice(0, 8), await receiver('warm-up'), { batch: 1, seconds: WARM_UP_SECONDS });
      for (const concurrency of [1, 8, 32]) {
        log(`single-item pushes, ${concurrency} concurrent senders`);
        const target = await receiver(`single-${concurrency}`);
        const before = relay.writeBytes();
        const cpuBefore = relayCpu();
        const groupsBefore = await relay.groups();
        push[concurrency] = await pushPhase(senders.slice(0, concurrency), target, { batch: 1, seconds: PHASE_SECONDS, prebuiltItems: PREBUILT_ITEMS });
        const groupsAfter = await relay.groups();
        groupSizes[`single-item pushes, ${concurrency} sender(s)`] = (groupsAfter.members - groupsBefore.members) / (groupsAfter.count - groupsBefore.count);
        cpuPerItem[`single-item pushes, ${concurrency} sender(s)`] = cpuOf(push[concurrency] as PhaseResult, cpuBefore);
        if (concurrency === 32) push['bytes'] = { ...(push[32] as PhaseResult), itemsPerSecond: (relay.writeBytes() - before) / (push[32] as PhaseResult).items };
      }
      log('100-item batches, 8 concurrent senders');
      const batchCpuBefore = relayCpu();
      const batchGroupsBefore = await relay.groups();
      const batches = await pushPhase(senders.slice(0, 8), await receiver('batches'), { batch: 100, seconds: PHASE_SECONDS, prebuiltItems: PREBUILT_ITEMS });
      const batchGroupsAfter = await relay.groups();
      groupSizes['100-item batches'] = (batchGroupsAfter.members - batchGroupsBefore.members) / (batchGroupsAfter.count - batchGroupsBefore.count);
      cpuPerItem['100-item batches'] = cpuOf(batches, batchCpuBefore);
      log(`queue depth: filling one queue with ${DEEP_QUEUE} items, then single-item pushes (8 senders) into empty queues and the deep one, in turns`);
      const deep = await receiver('deep');
      await pushPhase(senders.slice(0, 8), deep, { batch: 100, seconds: 600, maxItems: DEEP_QUEUE });
      // in turns, each empty run into a fresh queue, so that the machine's drift hits both sides alike
      let emptyQueues = 0;
      const { a: intoEmpty, b: intoDeep } = await alternatingPushPhases(senders.slice(0, 8), {
        a: () => receiver(`empty-${(emptyQueues += 1)}`), b: async () => deep,
      }, DEPTH_ROUNDS, { batch: 1, seconds: 2 * PHASE_SECONDS, prebuiltItems: PREBUILT_ITEMS });
      log(`filling one queue to ${BIG_QUEUE} items for the RSS figure`);
      const big = await receiver('big');
      await pushPhase(senders.slice(0, 8), big, { batch: 100, seconds: 600, maxItems: BIG_QUEUE });
      const rssWithBigQueue = relay.peakRss();
      log(`pull + ack of the ${BIG_QUEUE}-item queue, pages of 500`);
      const pullCpuBefore = relayCpu();
      const pullAck = await pullAckPhase(big, 500);
      cpuPerItem['pull + ack'] = cpuOf(pullAck, pullCpuBefore);

      const bytesPerItem = (push['bytes'] as PhaseResult).itemsPerSecond;
      const pg = (level: number): number | null => (postgres.available ? postgres.insertsPerSecond[level] ?? null : null);
      const batchCeiling = Math.min(ceilings.sqliteHundredRowsPerCommit, ceilings.ed25519SignsPerSecond);
      const table = new Table();
      table.section('ceilings of this machine (same run)');
      table.row('node:sqlite, 1 row per commit (commits/s)', ceilings.sqliteOneRowPerCommit, null, '');
      table.row('node:sqlite, 100 rows per commit (rows/s)', ceilings.sqliteHundredRowsPerCommit, null, '');
      table.row('Ed25519 signs/s', ceilings.ed25519SignsPerSecond, null, '');
      for (const level of [8, 32]) {
        const value = pg(level);
        if (value !== null) table.row(`PostgreSQL ${level} sessions, 1-row INSERT … ON CONFLICT DO NOTHING (rows/s)`, value, ceilings.sqliteOneRowPerCommit, '÷ 1-row ceiling');
      }
      if (!postgres.available) table.note(`PostgreSQL: ${postgres.reason}`);
      table.section('relay (child process, every answer after the fsync of its commit, group commit)');
      for (const level of [1, 8, 32]) {
        const result = push[level] as PhaseResult;
        const pgValue = level === 1 ? null : pg(level);
        table.row(`single-item pushes, ${level} sender${level === 1 ? '' : 's'} (items/s)`, result.itemsPerSecond, ceilings.sqliteOneRowPerCommit, '÷ 1-row ceiling',
          pgValue === null ? undefined : { label: `> PostgreSQL (${pgValue.toFixed(0)}/s)`, ok: result.itemsPerSecond > pgValue, ratio: result.itemsPerSecond / pgValue });
        table.latency(`  latency p50 / p99 (ms)`, result.p50Ms, result.p99Ms, 1000 / ceilings.sqliteOneRowPerCommit);
      }
      table.row('100-item batches, 8 senders (items/s)', batches.itemsPerSecond, batchCeiling, '÷ min(100-row, sign)',
        { label: '≥ 0.5 × ceiling', ok: batches.itemsPerSecond >= 0.5 * batchCeiling, ratio: batches.itemsPerSecond / batchCeiling });
      table.latency('  latency p50 / p99 (ms, per 100-item request)', batches.p50Ms, batches.p99Ms, 1000 / ceilings.sqliteOneRowPerCommit);
      table.row(`single-item pushes into an empty queue, 8 senders, ${DEPTH_ROUNDS} turns (items/s)`, intoEmpty.itemsPerSecond, ceilings.sqliteOneRowPerCommit, '÷ 1-row ceiling');
      table.row(`single-item pushes into a ${DEEP_QUEUE}-item queue, 8 senders, in turns with it (items/s)`, intoDeep.itemsPerSecond, intoEmpty.itemsPerSecond, '÷ empty queue',
        { label: '≥ 0.9 × empty', ok: intoDeep.itemsPerSecond >= 0.9 * intoEmpty.itemsPerSecond, ratio: intoDeep.itemsPerSecond / intoEmpty.itemsPerSecond });
      table.latency('  latency p50 / p99 (ms), deep queue', intoDeep.p50Ms, intoDeep.p99Ms, 1000 / ceilings.sqliteOneRowPerCommit);
      table.row(`pull + ack, pages of 500 (items/s)`, pullAck.itemsPerSecond, ceilings.sqliteHundredRowsPerCommit, '÷ 100-row ceiling',
        { label: '≥ 20,000/s', ok: pullAck.itemsPerSecond >= 20_000, ratio: pullAck.itemsPerSecond / 20_000 });
      table.latency('  latency p50 / p99 (ms, per page pulled and acked)', pullAck.p50Ms, pullAck.p99Ms, 1000 / ceilings.sqliteOneRowPerCommit);
      table.row(`bytes written to disk per accepted item (${ITEM_WIRE_BYTES}-byte wire), 32 senders`, bytesPerItem, 8 * 1024, '÷ 8 KiB target',
        { label: '≤ 8 KiB', ok: bytesPerItem <= 8 * 1024, ratio: bytesPerItem / (8 * 1024) });
      table.row(`relay peak RSS with ${BIG_QUEUE} items queued (MiB)`, rssWithBigQueue / MiB, 200 * 1_000_000 / MiB, '÷ 200 MB target',
        { label: '< 200 MB', ok: rssWithBigQueue < 200 * 1_000_000, ratio: rssWithBigQueue / (200 * 1_000_000) });
      table.section(`CPU per item (user + system ms) of the relay and of the load generator beside it; the machine's load average was ${loadavg()[0]?.toFixed(1)} on ${availableParallelism()} cores`);
      for (const [figure, cpu] of Object.entries(cpuPerItem)) table.cpu(figure, cpu, availableParallelism());
      table.section('group commit: mean transactions per COMMIT');
      for (const [figure, size] of Object.entries(groupSizes)) table.row(figure, size, null, '');
      process.stdout.write(table.render());

      const results = {
        at: new Date().toISOString(), node: process.version, itemWireBytes: ITEM_WIRE_BYTES, ceilings, postgres,
        relay: { singleItemPushes: { 1: push[1], 8: push[8], 32: push[32] }, batches100: batches, intoEmptyQueue: intoEmpty, intoDeepQueue: intoDeep,
          pullAck, bytesWrittenPerItemAt32: bytesPerItem, peakRssBytesWith100kQueued: rssWithBigQueue, cpuMsPerItem: cpuPerItem, meanGroupSize: groupSizes },
        loadAverage: loadavg(),
        targets: table.targets(),
      };
      writeFileSync(join(import.meta.dirname, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
      log('wrote bench/results.json');
    } finally {
      await relay.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
