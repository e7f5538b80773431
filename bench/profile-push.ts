// `node bench/profile-push.ts`: a CPU profile of the relay during one bench phase (single-item
// pushes from 32 senders, or PROFILE_BATCH=100: 100-item batches from 8), summarised by where the relay's event loop spends its time per item.
// The relay child runs with --cpu-prof; the profile of its main thread is read back and its self
// time grouped by module (store, core, protocol, fastify, node's HTTP, GC…). PROFILE_WORKERS=N
// profiles `--workers N` (each process writes its own profile; all are summed). PROFILE_STORE=postgres
// runs the relay on a throwaway PostgreSQL cluster (bench/postgres.ts) and adds the server's CPU per item.
// PROFILE_DIR=<dir> keeps the raw .cpuprofile files there.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enrolHost, pushPhase, type Host } from './load.ts';
import { startRelayOnPostgres } from './postgres.ts';
import { BENCH_SETTINGS, startRelayChild } from './relay-child.ts';

const SECONDS = 5;
/** PROFILE_BATCH=100 profiles 100-item batches from 8 senders (the bench's batch phase) instead of single items from 32. */
const BATCH = Number(process.env['PROFILE_BATCH'] ?? 1);
if (!Number.isSafeInteger(BATCH) || BATCH < 1)
  throw new Error(`PROFILE_BATCH must be a whole number of items per request, got ${process.env['PROFILE_BATCH']}`);
const SENDERS = BATCH === 1 ? 32 : 8;
const TOP = 25;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface Profile {
  nodes: ProfileNode[];
  /** µs on the monotonic clock (the same CLOCK_MONOTONIC as process.hrtime in this process) */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Microseconds on the monotonic clock, comparable with a profile's sample times. */
function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Which part of the relay a function belongs to, from its script's URL. */
function partOf(url: string, name: string): string {
  if (name === '(garbage collector)') return 'garbage collector';
  if (name === '(program)' || name === '(idle)') return name;
  const rules: Array<[RegExp, string]> = [
    [/src\/relay\/store\//, 'relay store (SQL calls, rows)'],
    [/src\/relay\/core\//, 'relay core (checks, push, pull)'],
    [/src\/relay\/http\//, 'relay HTTP layer (routes, logging, metrics)'],
    [/src\/relay\/crypto\//, 'hop verify pool (event-loop side)'],
    [/src\/protocol\//, 'protocol (hop headers, base64, hashes, records)'],
    [/node_modules\/(fastify|find-my-way|avvio|@fastify)/, 'fastify'],
    [/node_modules\/(pino|prom-client)/, 'pino / prom-client'],
    [/node_modules\//, 'other dependencies'],
    [/node:internal\/(http|_http)|node:_http|node:http/, 'node HTTP'],
    [/node:internal\/(stream|streams)|node:stream/, 'node streams'],
    [/node:net|node:internal\/net|node:internal\/stream_base/, 'node net / sockets'],
    [/crypto/, 'node crypto'],
    [/node:internal\/(worker|process|timers|async_hooks|event_target|events)|node:events/, 'node event loop, timers, workers'],
  ];
  for (const [pattern, part] of rules) if (pattern.test(url)) return part;
  return url === '' ? `native (${name || 'anonymous'})` : 'other node internals';
}

/** Milliseconds of samples per profile node within [fromUs, toUs]: each sample counts the time since the one before. */
function timeInWindow(profile: Profile, fromUs: number, toUs: number): Map<number, number> {
  const ms = new Map<number, number>();
  let at = profile.startTime;
  profile.samples.forEach((nodeId, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= fromUs && at <= toUs) ms.set(nodeId, (ms.get(nodeId) ?? 0) + delta / 1000);
  });
  return ms;
}

function summarise(profiles: Profile[], items: number, fromUs: number, toUs: number): string {
  const byPart = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let totalMs = 0;
  // each process's own figures (a relay group: the primary writes, the workers answer HTTP)
  const byProcess: string[] = [];
  for (const profile of profiles) {
    const inWindow = timeInWindow(profile, fromUs, toUs);
    let processMs = 0;
    let topName = '';
    let topMs = 0;
    for (const node of profile.nodes) {
      const ms = inWindow.get(node.id) ?? 0;
      if (ms === 0 || node.callFrame.functionName === '(idle)') continue;
      totalMs += ms;
      processMs += ms;
      if (ms > topMs) [topName, topMs] = [node.callFrame.functionName || '(anonymous)', ms];
      const part = partOf(node.callFrame.url, node.callFrame.functionName);
      byPart.set(part, (byPart.get(part) ?? 0) + ms);
      const where = `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${node.callFrame.lineNumber + 1}`;
      byFunction.set(where, (byFunction.get(where) ?? 0) + ms);
    }
    byProcess.push(`  event loop ${(processMs / items).toFixed(3)} ms/item, most in ${topName} (${(topMs / items).toFixed(3)} ms/item)`);
  }
  const perItem = (ms: number): string => `${(ms / items).toFixed(4)} ms/item  ${((100 * ms) / totalMs).toFixed(1)} %`;
  const lines = [
    `${items} items in ${((toUs - fromUs) / 1e6).toFixed(1)} s; event-loop CPU ${(totalMs / items).toFixed(3)} ms/item (not idle)`,
    '',
    'by process:',
    ...byProcess,
    '',
    'by part:',
  ];
  for (const [part, ms] of [...byPart].sort((a, b) => b[1] - a[1])) lines.push(`  ${part.padEnd(52)} ${perItem(ms)}`);
  lines.push('', `top ${TOP} functions by self time:`);
  for (const [where, ms] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP)) lines.push(`  ${where.slice(0, 90).padEnd(90)} ${perItem(ms)}`);
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'agentmbx-profile-'));
  // PROFILE_DIR keeps the raw profiles (for a closer look in Chrome's DevTools) where it names
  const profileDir = process.env['PROFILE_DIR'] ?? join(dir, 'profiles');
  try {
    process.env['BENCH_RELAY_NODE_ARGS'] = `--cpu-prof --cpu-prof-dir=${profileDir} ${process.env['BENCH_RELAY_NODE_ARGS'] ?? ''}`;
    const workers = Number(process.env['PROFILE_WORKERS'] ?? '1');
    const relay = process.env['PROFILE_STORE'] === 'postgres' ? await startRelayOnPostgres(dir, workers) : await startRelayChild(dir, BENCH_SETTINGS, workers);
    let items = 0;
    let fromUs = 0;
    let toUs = 0;
    let serverMs = 0;
    let relayMs = 0;
    try {
      const senders: Host[] = [];
      for (let i = 0; i < SENDERS; i += 1) senders.push(await enrolHost(relay.url, `sender-${i}`));
      await pushPhase(senders.slice(0, 8), await enrolHost(relay.url, 'warm-up'), { batch: 1, seconds: 3 });
      const target = await enrolHost(relay.url, 'measured');
      // the window starts after the prebuilt items are signed (they take a few seconds): pushPhase builds them first
      let started = 0;
      let serverBefore = 0;
      let relayBefore = 0;
      const phase = pushPhase(senders, target, {
        batch: BATCH,
        seconds: SECONDS,
        prebuiltItems: 20_000,
        onStart: () => {
          started = nowUs();
          serverBefore = relay.serverCpuMs?.() ?? 0;
          relayBefore = relay.cpuMs();
        },
      });
      items = (await phase).items;
      fromUs = started;
      toUs = nowUs();
      serverMs = (relay.serverCpuMs?.() ?? 0) - serverBefore;
      relayMs = relay.cpuMs() - relayBefore;
    } finally {
      await relay.stop();
    }
    // the profile covers the relay's whole life: only the measured phase's samples are counted
    const profiles = readdirSync(profileDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => JSON.parse(readFileSync(join(profileDir, f), 'utf8')) as Profile);
    process.stdout.write(summarise(profiles, items, fromUs, toUs));
    // the profile's samples count wall time: a socket write that woke the server on this core counts the server's turn too
    process.stdout.write(`\nrelay CPU (every process and thread, user + system, profiler included): ${(relayMs / items).toFixed(3)} ms/item\n`);
    if (serverMs > 0) process.stdout.write(`\ndatabase server CPU (every backend, user + system): ${(serverMs / items).toFixed(3)} ms/item\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
