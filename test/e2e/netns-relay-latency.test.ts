// How fast mail crosses networks through the relay when nothing fails (issue 30): two hosts whose
// LAN is cut, each daemon holding its pull at the relay; the time from `agentmbx send` returning to
// the recipient's `watch` printing the message. A measurement, printed as test diagnostics and never
// asserted on time (the target, p50 ≤ 250 ms and p99 ≤ 1 s, is judged in docs/benchmark.md on a
// quiet machine). What it asserts is that each message is watched exactly once. Needs root.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { percentile } from '../../bench/load.ts';
import { makeTwoNetworks } from '../helpers/netns.ts';
import { spawnCli, tempDir } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';
import { withDeadline } from '../helpers/wait.ts';
import { E2E_TIMEOUT_MS, cli, newCliHost, pairCli, startCliDaemon, type CliHost } from './host-helpers.ts';
import { send } from './host-relay-helpers.ts';

/** Messages timed, one at a time (each waits for the one before to be watched). */
const TIMED = 30;
/** Longest wait for one message to be watched. */
const MESSAGE_DEADLINE_MS = 30_000;

test("through the relay with held pulls, no faults: agentmbx send returning → the recipient's watch line", {
  timeout: E2E_TIMEOUT_MS,
}, async (t: TestContext) => {
  const net = makeTwoNetworks();
  if (typeof net === 'string') {
    t.skip(net);
    return;
  }
  const relay = await spawnRelay(tempDir('mbx-relay-latency-'), { netns: net.cloud.netns, args: ['--bind', net.cloud.addr] });
  const home = await newCliHost('home', ['ann'], { netns: net.home.netns, bind: net.home.addr });
  const work = await newCliHost('work', ['bob'], { netns: net.work.netns, bind: net.work.addr });
  const daemons = [await startCliDaemon(home), await startCliDaemon(work)];
  await pairCli(home, work);
  for (const host of [home, work]) await cli(host, ['relay', 'set', relay.url, '--key', relay.fingerprint]);
  for (const daemon of daemons) await withDeadline('relay ready', 60_000, daemon.waitForLine(/relay ready: /));
  net.cutLan();

  // the time each watched id reached this process, taken as its line arrives
  const watchedAt = new Map<string, number[]>();
  const watch = spawnCli(['watch', '--agent', 'bob', '--json'], { env: { ...process.env, ...work.env }, netns: net.work.netns });
  let partial = '';
  watch.process.stdout?.on('data', (chunk: string) => {
    const at = Date.now();
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const id = (JSON.parse(line) as { id: string }).id;
      watchedAt.set(id, [...(watchedAt.get(id) ?? []), at]);
    }
  });
  const watched = (id: string): Promise<void> =>
    withDeadline(
      `${id} watched`,
      MESSAGE_DEADLINE_MS,
      (async () => {
        while (!watchedAt.has(id)) await new Promise((resolve) => watch.process.stdout?.once('data', resolve));
      })(),
    );

  // one untimed message first: the sender learns the LAN is cut and the watch is surely running
  await watched(await sendTo(home));
  const latencies: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < TIMED; i++) {
    const id = await sendTo(home);
    const returnedAt = Date.now();
    ids.push(id);
    await watched(id);
    // the line may come before this process saw send exit: that counts as 0
    latencies.push(Math.max(0, (watchedAt.get(id)?.[0] as number) - returnedAt));
  }
  watch.kill('SIGTERM');
  await watch.exited;

  for (const id of ids) {
    assert.equal(watchedAt.get(id)?.length, 1, `${id}: watched exactly once`);
    assert.match(daemons[0]?.stdout() ?? '', new RegExp(`${id} -> work: relay accepted seq`), `${id} went through the relay`);
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  t.diagnostic(
    `send returning → watch line, through the relay (LAN cut, held pulls, no faults), n=${sorted.length}: ` +
      `p50=${percentile(sorted, 50)} ms p99=${percentile(sorted, 99)} ms max=${sorted[sorted.length - 1]} ms (targets: p50 ≤ 250 ms, p99 ≤ 1 s)`,
  );
});

/** ann@home sends bob@work a message; its id once `send` returned. */
function sendTo(home: CliHost): Promise<string> {
  return send(home, 'ann', 'bob@work', 'timed');
}
