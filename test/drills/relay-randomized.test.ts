// The randomized crash drill (design §5, issue 5): two senders and a receiver keep working while the
// relay child process is killed with SIGKILL at random moments, again and again, and restarted on
// the same store. At the end nothing accepted is lost, nothing is duplicated, nothing is invented.
// The seed is printed; MBX_DRILL_SEED=<seed> replays the same choices (batch sizes, page sizes, acks,
// kill delays; the OS still decides the exact interleaving).
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { enrolledHost } from '../helpers/relay-fixture.ts';
import { tempDir } from '../helpers/processes.ts';
import { check, DrillReceiver, DrillSender, spawnDrillRelay, type DrillRelay } from './relay-drill-kit.ts';

const MESSAGES_PER_SENDER = 80;
const KILLS = 8;
/** How long a loop waits before retrying once its call failed (the relay is being restarted). */
const RETRY_MS = 50;

/** mulberry32: a small seeded PRNG, values in [0, 1). */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

test('the relay killed at random moments many times: nothing lost, duplicated or invented', async (t) => {
  const seed = process.env['MBX_DRILL_SEED'] !== undefined ? Number(process.env['MBX_DRILL_SEED']) : randomInt(2 ** 31);
  assert.ok(Number.isSafeInteger(seed), 'MBX_DRILL_SEED must be an integer');
  t.diagnostic(`relay randomized drill seed ${seed} (replay with MBX_DRILL_SEED=${seed})`);
  process.stdout.write(`relay randomized drill seed ${seed}\n`);

  const dir = tempDir('agentmbx-drill-');
  let relay: DrillRelay = await spawnDrillRelay(dir);
  const firstEpoch = relay.epoch;
  const at = { url: relay.url, clock: { nowMs: () => Date.now() } };
  const [a, c, b] = [await enrolledHost(at, 'laptop'), await enrolledHost(at, 'tablet'), await enrolledHost(at, 'desk')];
  const senders = [new DrillSender(a, b), new DrillSender(c, b)];
  for (const sender of senders) sender.compose(MESSAGES_PER_SENDER, Date.now());
  const receiver = new DrillReceiver(b);
  let killing = true;
  let failedCalls = 0;

  /** Runs `call` against the current relay; a failure (the relay died under it) waits and lets the loop retry. */
  const attempt = async (call: (r: DrillRelay) => Promise<void>): Promise<void> => {
    try {
      await call(relay);
    } catch {
      failedCalls += 1;
      await sleep(RETRY_MS);
    }
  };

  const sendLoop = async (sender: DrillSender, random: () => number): Promise<void> => {
    for (let pending = sender.pending(); pending.length > 0; pending = sender.pending()) {
      const batch = pending.slice(0, 1 + Math.floor(random() * 10));
      await attempt(async (r) => {
        await sender.push(r, batch);
      });
    }
  };
  const sendersDone = Promise.all(senders.map((sender, i) => sendLoop(sender, prng(seed + 1 + i))));

  const killLoop = async (random: () => number): Promise<void> => {
    for (let kill = 0; kill < KILLS; kill += 1) {
      await sleep(30 + Math.floor(random() * 200));
      relay.child.kill('SIGKILL');
      assert.equal(await relay.child.exited, 'SIGKILL');
      relay = await spawnDrillRelay(dir);
      assert.equal(relay.epoch, firstEpoch, 'a crash and restart keep the epoch');
    }
    killing = false;
  };
  const killsDone = killLoop(prng(seed + 10));

  let sending = true;
  void sendersDone.then(() => {
    sending = false;
  });
  const receive = async (random: () => number): Promise<void> => {
    while (killing || sending) {
      let more = false;
      await attempt(async (r) => {
        more = await receiver.pullPage(r, 1 + Math.floor(random() * 25));
        if (random() < 0.6) await receiver.ack(r);
      });
      if (!more) await sleep(5);
    }
    // the relay now stays up and every message is accepted: drain to the end, then check
    while (await receiver.pullPage(relay, 25));
    await receiver.ack(relay);
  };
  await Promise.all([sendersDone, killsDone, receive(prng(seed + 20))]);

  const verdict = check(senders, receiver);
  t.diagnostic(
    `kills ${KILLS}, failed calls ${failedCalls}, raw deliveries ${[...receiver.raw.values()].reduce((n, seqs) => n + seqs.length, 0)}, mailbox ${receiver.mailbox.size}`,
  );
  assert.deepEqual(verdict, { lost: [], duplicated: [], phantom: [] }, `seed ${seed}`);
  assert.equal(receiver.mailbox.size, MESSAGES_PER_SENDER * senders.length, 'every message arrived');
  assert.equal(receiver.epochChanges, 0);
  relay.child.kill('SIGTERM');
  await relay.child.exited;
});
