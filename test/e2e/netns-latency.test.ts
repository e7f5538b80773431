// How long mail takes while the LAN between two hosts drops packets silently and their daemons are
// SIGKILLed and restarted every few seconds (issue 19). A measurement, printed as test diagnostics
// and never asserted on time: send → relay accept and send → recipient inbox, p50 and p95. What it
// asserts is that every message arrives exactly once. Needs root (skipped with the reason otherwise).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { percentile } from '../../bench/load.ts';
import { makeTwoNetworks, type Site } from '../helpers/netns.ts';
import { spawnNode, tempDir, type Child } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';
import { waitUntil, withDeadline } from '../helpers/wait.ts';
import { E2E_TIMEOUT_MS, cli, inboxMessages, newCliHost, pairCli, startCliDaemon, type CliHost } from './host-helpers.ts';
import { send } from './host-relay-helpers.ts';

const MAIL_EACH_WAY = 30;
/** The kill loop's pace: a daemon (home and work in turn) is SIGKILLed and restarted this often. */
const KILL_EVERY_MS = 3_000;
/** Longest wait for all the mail to arrive once sending is over. */
const DELIVERY_DEADLINE_MS = 120_000;
/** TCP connects timed on the uncut LAN, for the connect timeout's figure (docs/host.md). */
const CONNECT_SAMPLES = 50;

const CONNECT_TIMING = `
const net = require('node:net');
const [host, port, n] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
(async () => {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((resolve, reject) => { const s = net.connect({ host, port }, () => { s.destroy(); resolve(); }); s.on('error', reject); });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  console.log(JSON.stringify(times));
})();`;

/** Milliseconds of `n` TCP connects from `site` to `url`. */
async function connectTimes(site: Site, url: string, n: number): Promise<number[]> {
  const { hostname, port } = new URL(url);
  const child = spawnNode(['-e', CONNECT_TIMING, hostname, port, String(n)], { netns: site.netns });
  await child.exited;
  return JSON.parse(child.stdout()) as number[];
}

function summary(name: string, values: number[]): string {
  const sorted = [...values].sort((x, y) => x - y);
  const at = (p: number): string => (percentile(sorted, p) / 1000).toFixed(1);
  return `${name}: n=${sorted.length} p50=${at(50)} s p95=${at(95)} s max=${at(100)} s`;
}

/** The first time each id matched `pattern` (group 1: ISO time, group 2: id) in any of `lives`' logs. */
function firstSeen(lives: Child[], pattern: RegExp): Map<string, number> {
  const seen = new Map<string, number>();
  for (const child of lives) {
    for (const line of child.stdout().split('\n')) {
      const m = pattern.exec(line);
      if (m === null) continue;
      const at = Date.parse(m[1] as string);
      const id = m[2] as string;
      if (!seen.has(id) || at < (seen.get(id) as number)) seen.set(id, at);
    }
  }
  return seen;
}

/**
 * Per host key fingerprint, the longest stretch of [from, to] in which the relay's request log shows
 * no request from that host.
 */
function longestQuiet(relayLog: string, from: number, to: number): Map<string, number> {
  const times = new Map<string, number[]>();
  for (const line of relayLog.split('\n')) {
    let entry: { msg?: unknown; host_fp?: unknown; time?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.msg !== 'request' || typeof entry.host_fp !== 'string' || typeof entry.time !== 'string') continue;
    const at = Date.parse(entry.time);
    if (at >= from && at <= to) times.set(entry.host_fp, [...(times.get(entry.host_fp) ?? []), at]);
  }
  return new Map(
    [...times].map(([fp, list]) => {
      const edges = [from, ...list.sort((x, y) => x - y), to];
      return [fp, Math.max(...edges.slice(1).map((at, i) => at - (edges[i] as number)))];
    }),
  );
}

/** Latencies from `sentAt` to the times in `seen`, for the ids that have both. */
function latencies(sentAt: Map<string, number>, seen: Map<string, number>): number[] {
  return [...sentAt].flatMap(([id, at]) => (seen.has(id) ? [(seen.get(id) as number) - at] : []));
}

test('mail keeps moving over a silently dropping LAN while daemons are killed: the latency figure', { timeout: 2 * E2E_TIMEOUT_MS }, async (t: TestContext) => {
  const net = makeTwoNetworks();
  if (typeof net === 'string') {
    t.skip(net);
    return;
  }
  const relay = await spawnRelay(tempDir('mbx-latency-relay-'), { netns: net.cloud.netns, args: ['--bind', net.cloud.addr] });
  const home = await newCliHost('home', ['ann'], { netns: net.home.netns, bind: net.home.addr });
  const work = await newCliHost('work', ['bob'], { netns: net.work.netns, bind: net.work.addr });
  const lives = new Map<CliHost, Child[]>([
    [home, []],
    [work, []],
  ]);
  const start = async (host: CliHost): Promise<void> => {
    lives.get(host)?.push(await startCliDaemon(host));
  };
  await start(home);
  await start(work);
  await pairCli(home, work);
  for (const host of [home, work]) await cli(host, ['relay', 'set', relay.url, '--key', relay.fingerprint]);
  for (const host of [home, work]) await withDeadline(`${host.name}: relay ready`, 60_000, (host.daemon as Child).waitForLine(/relay ready: /));
  const connects = await connectTimes(net.home, work.url, CONNECT_SAMPLES);
  t.diagnostic(
    `LAN TCP connect home → work (veth, uncut): ${summary(
      'connect',
      connects.map((ms) => ms * 1000),
    ).replace(/ s/g, ' ms')}`,
  );
  net.cutLan('drop');
  const cutAt = Date.now();

  // The kill loop: home and work in turn, until sending is over.
  let sending = true;
  let kills = 0;
  const killLoop = (async () => {
    for (let turn = 0; sending; turn++) {
      await new Promise((resolve) => setTimeout(resolve, KILL_EVERY_MS));
      const host = turn % 2 === 0 ? work : home;
      const daemon = host.daemon as Child;
      daemon.kill('SIGKILL');
      await daemon.exited;
      kills++;
      await start(host);
    }
  })();
  const sentAt = new Map<string, number>();
  const sendAll = async (host: CliHost, from: string, to: string): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 1; i <= MAIL_EACH_WAY; i++) {
      const id = await send(host, from, to, `${host.name} ${i}`);
      sentAt.set(id, Date.now());
      ids.push(id);
    }
    return ids;
  };
  const [toWork, toHome] = await Promise.all([sendAll(home, 'ann', 'bob@work'), sendAll(work, 'bob', 'ann@home')]);
  sending = false;
  await killLoop;

  for (const [host, agent, ids] of [
    [work, 'bob', toWork],
    [home, 'ann', toHome],
  ] as const) {
    let inbox: string[] = [];
    await waitUntil(`${ids.length} messages in ${agent}'s inbox`, DELIVERY_DEADLINE_MS, async () => {
      inbox = (await inboxMessages<{ id: string }>(host, agent)).map((m) => m.id);
      return ids.every((id) => inbox.includes(id)) ? null : `${inbox.length} of ${ids.length}`;
    });
    assert.deepEqual([...inbox].sort(), [...ids].sort(), `${agent}: every message exactly once`);
  }

  const deliveredAt = Date.now();
  // The relay writes its request log in blocks (LOG_FLUSH_MS): wait until it shows a request made after the mail arrived.
  await waitUntil('the relay log to reach the end of the run', 30_000, async () =>
    longestQuiet(relay.child.stdout(), deliveredAt, Infinity).size === 2 ? null : 'not yet',
  );
  const quiet = [...longestQuiet(relay.child.stdout(), cutAt, deliveredAt).values()].map((ms) => (ms / 1000).toFixed(1));

  const all = [...lives.values()].flat();
  const accepted = firstSeen(all, /^(\S+) envelope (\S+) -> \S+: relay (?:accepted|duplicate) seq/);
  const arrived = firstSeen(all, /^(\S+) relay envelope (\S+) seq \d+: accepted/);
  const lanFailures = all.flatMap((c) => c.stdout().split('\n')).filter((l) => / -> \S+: cannot reach /.test(l)).length;
  t.diagnostic(
    `${MAIL_EACH_WAY} messages each way, LAN dropping packets, ${kills} daemon SIGKILLs every ${KILL_EVERY_MS / 1000} s; ${lanFailures} rows logged a LAN failure`,
  );
  t.diagnostic(summary('send → relay accept', latencies(sentAt, accepted)));
  t.diagnostic(summary('send → recipient inbox', latencies(sentAt, arrived)));
  t.diagnostic(`longest time without a relay request, per host, from the cut until all mail arrived: ${quiet.join(' s, ')} s`);
});
