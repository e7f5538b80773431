// The restore drill, relay side (design §5, issue 5): a backup taken with the real CLI while mail
// flows, more mail after it, stop, `relay restore`, start. The new epoch is visible (409 on the
// stale one, and in every accept), senders re-push what they still hold, the receiver pulls again
// from 0, and every message is in its mailbox exactly once; mail acked before the backup (and
// confirmed to its sender) is not handed out again.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { enrolledHost } from '../helpers/relay-fixture.ts';
import { runCli, tempDir } from '../helpers/processes.ts';
import { check, DrillReceiver, DrillSender, spawnDrillRelay, type DrillRelay, type Message } from './relay-drill-kit.ts';

async function pushAll(sender: DrillSender, relay: DrillRelay, messages: Message[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 5) await sender.push(relay, messages.slice(i, i + 5));
  assert.ok(
    messages.every((m) => sender.accepted.has(m.id)),
    'every message holds an accept receipt',
  );
}

async function drain(receiver: DrillReceiver, relay: DrillRelay): Promise<void> {
  while (await receiver.pullPage(relay, 7));
  await receiver.ack(relay);
}

test('backup while mail flows, more mail, restore: the new epoch, re-push, re-pull, each message exactly once', async () => {
  const dir = tempDir('agentmbx-drill-');
  const first = await spawnDrillRelay(dir);
  const at = { url: first.url, clock: { nowMs: () => Date.now() } };
  const [a, b] = [await enrolledHost(at, 'laptop'), await enrolledHost(at, 'desk')];
  const sender = new DrillSender(a, b);
  const receiver = new DrillReceiver(b);
  sender.compose(60, Date.now());
  const [ackedBefore, queuedBefore, during, after] = [0, 10, 20, 40].map((start, i, all) => sender.messages.slice(start, all[i + 1] ?? 60)) as [
    Message[],
    Message[],
    Message[],
    Message[],
  ];

  // mail acked before the backup; its sender has its delivery receipt and holds it no more
  await pushAll(sender, first, ackedBefore);
  await drain(receiver, first);
  const confirmed = new Set(ackedBefore.map((m) => m.id));
  await pushAll(sender, first, queuedBefore);

  const file = join(tempDir(), 'relay-backup-1.db');
  const [backup] = await Promise.all([runCli(['relay', 'backup', file, '--store-dir', dir]), pushAll(sender, first, during)]);
  assert.equal(backup.code, 0, backup.stderr);
  assert.equal((JSON.parse(backup.stdout) as { epoch: string }).epoch, first.epoch);

  // after the backup: more mail, some of it pulled and acked, then the relay stops
  await pushAll(sender, first, after.slice(0, 10));
  await drain(receiver, first);
  await pushAll(sender, first, after.slice(10));
  first.child.kill('SIGTERM');
  assert.equal(await first.child.exited, 0);

  const refusedWhileRunning = await spawnDrillRelay(dir);
  const busy = await runCli(['relay', 'restore', file, '--store-dir', dir]);
  assert.equal(busy.code, 1);
  assert.match(busy.stderr, /a relay is serving the store/);
  refusedWhileRunning.child.kill('SIGTERM');
  await refusedWhileRunning.child.exited;

  const restore = await runCli(['relay', 'restore', file, '--store-dir', dir]);
  assert.equal(restore.code, 0, restore.stderr);
  const receipt = JSON.parse(restore.stdout) as { epoch: string; backup_epoch: string; rollback: string };
  assert.equal(receipt.backup_epoch, first.epoch);
  const second = await spawnDrillRelay(dir);
  assert.equal(second.epoch, receipt.epoch);
  assert.notEqual(second.epoch, first.epoch, 'a restore rotates the epoch');

  // the sender sees the new epoch in its next accept and re-pushes every row it still holds
  const probe = await pushAllNewEpoch(sender, second, after.slice(-1));
  assert.equal(probe, second.epoch);
  const held = sender.messages.filter((m) => !confirmed.has(m.id));
  await pushAll(sender, second, held);
  assert.ok(held.every((m) => sender.accepted.get(m.id) === second.epoch));

  // the receiver's next pull names its old epoch: 409, back to 0, pull everything again
  const before = new Map(receiver.raw);
  await drain(receiver, second);
  assert.equal(receiver.epochChanges, 1);
  const handedOutAgain = [...receiver.raw.keys()].filter((id) => (receiver.raw.get(id)?.length ?? 0) > (before.get(id)?.length ?? 0));
  assert.ok(
    handedOutAgain.every((id) => !confirmed.has(id)),
    'mail acked before the backup is not delivered again',
  );

  const verdict = check([sender], receiver, { seqsPerId: 2 });
  assert.deepEqual(verdict, { lost: [], duplicated: [], phantom: [] });
  assert.equal(receiver.mailbox.size, sender.messages.length, 'every message is in the mailbox');
  assert.ok(
    [...receiver.mailbox.values()].every((count) => count === 1),
    'exactly once',
  );

  const log = JSON.parse((await runCli(['relay', 'log', '--json', '--store-dir', dir])).stdout) as Array<{ kind: string }>;
  assert.deepEqual(log.map((entry) => entry.kind).slice(0, 2), ['restore', 'backup']);
  second.child.kill('SIGTERM');
  await second.child.exited;
});

/** Pushes one held row again and returns the epoch its accept names. */
async function pushAllNewEpoch(sender: DrillSender, relay: DrillRelay, messages: Message[]): Promise<string | undefined> {
  await sender.push(relay, messages);
  return sender.accepted.get(messages[0]?.id ?? '');
}
