// The receiver's crash windows (design §5, windows 3 and 4) with a real SIGKILL of beta's daemon:
// killed after an item's effect committed but before the checkpoint, it pulls again and the item is
// a duplicate; killed after the checkpoint but before the ack, it does not process the items again
// and its next ack covers them. A sender killed between the relay's answer and its own row update
// pushes again and gets a duplicate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E2E_TIMEOUT_MS, startCliDaemon, inboxMessages } from './host-helpers.ts';
import { relayedPair, send } from './host-relay-helpers.ts';

interface InboxItem {
  id: string;
}

async function twoWaitingForBeta(failpoint: string) {
  const pair = await relayedPair();
  pair.db.kill('SIGTERM');
  await pair.db.exited;
  const m1 = await send(pair.alpha, 'ann', 'bob@beta', 'one');
  const m2 = await send(pair.alpha, 'ann', 'bob@beta', 'two');
  for (const id of [m1, m2]) await pair.da.waitForLine(new RegExp(`envelope ${id} -> beta: relay accepted seq \\d+`));
  const crashing = await startCliDaemon(pair.beta, { MBX_FAILPOINT: failpoint });
  assert.equal(await crashing.exited, 'SIGKILL');
  return { ...pair, m1, m2 };
}

test("window 3: beta dies after an item's effect, before the checkpoint; the re-pull is a duplicate", { timeout: E2E_TIMEOUT_MS }, async () => {
  // (the dying daemon's own log lines may not reach the pipe: SIGKILL drops what is unflushed)
  const { beta, m1, m2 } = await twoWaitingForBeta('host.relay.after-effect');
  const db = await startCliDaemon(beta);
  await db.waitForLine(/relay acked through \d+/);
  // The first item by seq (either message: m2 may have reached the relay first) was committed before
  // the crash and comes back a duplicate; the second is new.
  const results = [m1, m2].map((id) => new RegExp(`relay envelope ${id} seq (\\d+): (\\w+)`).exec(db.stdout()));
  const bySeq = results.map((m) => [Number(m?.[1]), m?.[2]] as const).sort((x, y) => x[0] - y[0]);
  assert.deepEqual(
    bySeq.map(([, status]) => status),
    ['duplicate', 'accepted'],
    db.stdout(),
  );
  assert.deepEqual(
    (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id),
    [m1, m2],
  );
});

test('window 4: beta dies after the checkpoint, before the ack; nothing is processed again and the next ack covers it', {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const { beta, m1, m2 } = await twoWaitingForBeta('host.relay.after-checkpoint');
  const db = await startCliDaemon(beta);
  await db.waitForLine(/relay acked through \d+/);
  assert.doesNotMatch(db.stdout(), /relay envelope/, 'the checkpoint held: no item pulled twice');
  assert.deepEqual(
    (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id),
    [m1, m2],
  );
});

test('the sender dies after the relay answered, before updating its row: the re-push is a duplicate', { timeout: E2E_TIMEOUT_MS }, async () => {
  const { alpha, beta, da } = await relayedPair();
  da.kill('SIGTERM');
  await da.exited;
  const crashing = await startCliDaemon(alpha, { MBX_FAILPOINT: 'host.relay.after-push' });
  const id = await send(alpha, 'ann', 'bob@beta', 'pushed, not recorded');
  assert.equal(await crashing.exited, 'SIGKILL');
  const restarted = await startCliDaemon(alpha);
  await restarted.waitForLine(new RegExp(`envelope ${id} -> beta: relay duplicate seq \\d+`));
  await restarted.waitForLine(new RegExp(`relay receipt receipt:${id}:bob@beta:1 seq \\d+: accepted`));
  assert.deepEqual(
    (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id),
    [id],
  );
});
