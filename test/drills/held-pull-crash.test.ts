// `relay serve --workers 2` with hosts holding their pulls (docs/relay-operator.md "Held pulls"):
// both workers, which hold every pull between them, are SIGKILLed one after the other while mail
// flows; their hosts' pulls are cut, they pull again at once (through the worker that is left, or a
// replacement), and every accepted message reaches its receiver exactly once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { enrolledHost } from '../helpers/relay-fixture.ts';
import { tempDir } from '../helpers/processes.ts';
import { servingWorkers } from '../helpers/relay-process.ts';
import { waitUntil } from '../helpers/wait.ts';
import { check, DrillReceiver, DrillSender, spawnDrillRelay, type DrillRelay } from './relay-drill-kit.ts';

const PAIRS = 6;
const MESSAGES_PER_PAIR = 30;
/** Messages accepted before the kill: mail is flowing into held pulls. */
const ACCEPTED_BEFORE_KILL = 40;
const WAIT_S = 50;
/** A loop whose call failed (its worker was killed under it) tries again after this. */
const RETRY_MS = 20;

async function heldPulls(relay: DrillRelay): Promise<number> {
  const text = await (await fetch(new URL('/metrics', relay.url))).text();
  return Number(/^agentmbx_held_pulls (\d+)$/m.exec(text)?.[1] ?? 'NaN');
}

test('both workers, holding every pull, SIGKILLed in turn while mail flows: the hosts pull again, nothing is lost or delivered twice', {
  timeout: 180_000,
}, async (t) => {
  const relay = await spawnDrillRelay(tempDir('agentmbx-held-drill-'), { workers: 2 });
  const at = { url: relay.url, clock: { nowMs: () => Date.now() } };
  const pairs: Array<{ sender: DrillSender; receiver: DrillReceiver }> = [];
  for (let i = 0; i < PAIRS; i += 1) {
    const receiver = new DrillReceiver(await enrolledHost(at, `desk-${i}`));
    const sender = new DrillSender(await enrolledHost(at, `laptop-${i}`), receiver.host);
    sender.compose(MESSAGES_PER_PAIR, Date.now());
    pairs.push({ sender, receiver });
  }
  const victims = servingWorkers(relay);
  assert.equal(victims.length, 2);

  let done = false;
  let failedPulls = 0;
  // each receiver keeps one pull held, pulls again as soon as one is answered, and acks what it took
  const receiving = pairs.map(async ({ receiver }) => {
    while (!done) {
      try {
        const before = receiver.checkpoint;
        await receiver.pullPage(relay, 100, WAIT_S);
        if (receiver.checkpoint > before) await receiver.ack(relay);
      } catch {
        failedPulls += 1;
        await sleep(RETRY_MS);
      }
    }
  });
  await waitUntil('every receiver to hold its pull', 30_000, async () => {
    const held = await heldPulls(relay);
    return held === PAIRS ? null : `${held} held`;
  });
  let failedPushes = 0;
  const accepted = (): number => pairs.reduce((n, p) => n + p.sender.accepted.size, 0);
  const sending = pairs.map(async ({ sender }) => {
    for (let pending = sender.pending(); pending.length > 0; pending = sender.pending()) {
      try {
        await sender.push(relay, pending.slice(0, 1));
      } catch {
        failedPushes += 1;
        await sleep(RETRY_MS);
      }
    }
  });
  await waitUntil('mail to flow into the held pulls', 60_000, async () => (accepted() >= ACCEPTED_BEFORE_KILL ? null : `${accepted()} accepted`));
  // every pull is held by one of the two: each kill cuts those it held
  process.kill(victims[0] as number, 'SIGKILL');
  await waitUntil('a replacement worker', 60_000, async () => (servingWorkers(relay).length >= 3 ? null : relay.child.stderr().slice(-300)));
  process.kill(victims[1] as number, 'SIGKILL');
  await waitUntil('a second replacement worker', 60_000, async () => (servingWorkers(relay).length >= 4 ? null : relay.child.stderr().slice(-300)));
  await Promise.all(sending);
  await waitUntil('every accepted message at its receiver', 60_000, async () => {
    const missing = pairs.reduce((n, { sender, receiver }) => n + [...sender.accepted.keys()].filter((id) => !receiver.mailbox.has(id)).length, 0);
    return missing === 0 ? null : `${missing} missing`;
  });
  done = true;
  // the loops end at their next answer: SIGTERM answers the held pulls
  relay.child.kill('SIGTERM');
  await Promise.all(receiving);
  await relay.child.exited;
  // a pull cut by a kill is mostly sent again by the client itself (a reset connection), else by the loop
  t.diagnostic(`failed pulls ${failedPulls}, failed pushes ${failedPushes}`);
  for (const { sender, receiver } of pairs) {
    assert.deepEqual(check([sender], receiver), { lost: [], duplicated: [], phantom: [] });
    assert.equal(receiver.mailbox.size, MESSAGES_PER_PAIR);
  }
});
