// `relay serve --workers 2` as real processes: a worker SIGKILLed during a push storm loses nothing,
// duplicates nothing and is replaced; the workers exit when their primary dies, and the group's one
// writer lock keeps a second relay off the store.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { enrolledHost } from '../helpers/relay-fixture.ts';
import { runCli, tempDir } from '../helpers/processes.ts';
import { servingWorkers, spawnRelay } from '../helpers/relay-process.ts';
import { waitUntil } from '../helpers/wait.ts';
import { check, DrillReceiver, DrillSender, spawnDrillRelay, type DrillRelay } from './relay-drill-kit.ts';

const SENDERS = 4;
const MESSAGES_PER_SENDER = 150;
/** Accepted messages before the kill: the storm is under way. */
const ACCEPTED_BEFORE_KILL = 120;
/** How long a loop waits before retrying once its call failed (its worker was killed under it). */
const RETRY_MS = 20;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('a worker SIGKILLed during a push storm: every accepted item is pullable exactly once, and the worker is replaced', async (t) => {
  const relay: DrillRelay = await spawnDrillRelay(tempDir('agentmbx-drill-'), { workers: 2 });
  const at = { url: relay.url, clock: { nowMs: () => Date.now() } };
  const receiverHost = await enrolledHost(at, 'desk');
  const senders: DrillSender[] = [];
  for (let i = 0; i < SENDERS; i += 1) senders.push(new DrillSender(await enrolledHost(at, `laptop-${i}`), receiverHost));
  for (const sender of senders) sender.compose(MESSAGES_PER_SENDER, Date.now());
  const [victim] = servingWorkers(relay);
  assert.ok(victim !== undefined && alive(victim));

  let failedCalls = 0;
  let inFlightAtKill = 0;
  let inFlight = 0;
  const accepted = (): number => senders.reduce((n, s) => n + s.accepted.size, 0);
  const sendLoop = async (sender: DrillSender, size: number): Promise<void> => {
    for (let pending = sender.pending(); pending.length > 0; pending = sender.pending()) {
      inFlight += 1;
      try {
        await sender.push(relay, pending.slice(0, size));
      } catch {
        failedCalls += 1;
        await sleep(RETRY_MS);
      } finally {
        inFlight -= 1;
      }
    }
  };
  const storm = Promise.all(senders.map((sender, i) => sendLoop(sender, 1 + (i % 3))));
  await waitUntil('the storm to get going', 120_000, async () => (accepted() >= ACCEPTED_BEFORE_KILL ? null : `${accepted()} accepted`));
  inFlightAtKill = inFlight;
  process.kill(victim, 'SIGKILL');
  await storm;
  await waitUntil('a replacement worker', 120_000, async () => (servingWorkers(relay).length >= 3 ? null : relay.child.stderr().slice(-300)));
  assert.match(relay.child.stderr(), new RegExp(`worker pid ${victim} died \\(signal SIGKILL\\): starting another`));
  assert.ok(!alive(victim));
  const live = servingWorkers(relay).filter(alive);
  assert.equal(live.length, 2, 'the group is back to two workers');

  const receiver = new DrillReceiver(receiverHost);
  while (await receiver.pullPage(relay, 100));
  await receiver.ack(relay);
  t.diagnostic(`requests in flight at the kill ${inFlightAtKill}, failed calls ${failedCalls}, mailbox ${receiver.mailbox.size}`);
  assert.deepEqual(check(senders, receiver), { lost: [], duplicated: [], phantom: [] });
  assert.equal(receiver.mailbox.size, SENDERS * MESSAGES_PER_SENDER, 'every message arrived once');
  relay.child.kill('SIGTERM');
  await relay.child.exited;
});

test('the primary killed: its workers exit, and the store is free for the next relay', async () => {
  const dir = tempDir('agentmbx-drill-');
  const first = await spawnRelay(dir, { workers: 2 });
  const workers = servingWorkers(first);
  assert.equal(workers.length, 2);
  // only the primary: its workers must notice on their own
  process.kill(first.child.process.pid as number, 'SIGKILL');
  await waitUntil('the workers to exit', 30_000, async () => {
    const left = workers.filter(alive);
    return left.length === 0 ? null : `still alive: ${left.join(', ')}`;
  });
  const second = await spawnRelay(dir, { workers: 2 });
  assert.equal(second.epoch, first.epoch, 'a fresh heartbeat: same epoch');
  assert.equal((await fetch(new URL('/healthz', second.url))).status, 200);
  second.child.kill('SIGTERM');
  assert.equal(await second.child.exited, 0);
  assert.ok(
    servingWorkers(second).every((pid) => !alive(pid)),
    'a stopped group leaves no worker behind',
  );
});

test('a second relay on the store of a running group is refused', async () => {
  const dir = tempDir('agentmbx-drill-');
  const group = await spawnRelay(dir, { workers: 2 });
  const second = await runCli(['relay', 'serve', '--store-dir', dir, '--port', '0', '--bind', '127.0.0.1', '--workers', '2']);
  assert.notEqual(second.code, 0);
  assert.match(second.stderr, /another agentmbx relay is using the store/);
  assert.doesNotMatch(second.stderr, /\n\s+at /, 'no stack trace');
  group.child.kill('SIGTERM');
  await group.child.exited;
});
