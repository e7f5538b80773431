// Disk faults on the relay (issue 18), injected for real: its store on a small tmpfs that the test
// fills with pushes and then grows, and a failing fsync of the WAL through a fault point. Each
// checks the exact refusal, /healthz, the metric, one log line per change of state, and that
// nothing accepted is lost or duplicated, also across a SIGKILL while the disk is full.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { enrolledHost } from '../helpers/relay-fixture.ts';
import { runCli, tempDir } from '../helpers/processes.ts';
import { MiB, mountTmpfs, tmpfsSkipReason } from '../helpers/tmpfs.ts';
import { check, DrillReceiver, DrillSender, spawnDrillRelay, type DrillRelay } from './relay-drill-kit.ts';

/** Each message body is padded to about this many characters (48 KiB envelopes, as in the issue). */
const PADDING = 'x'.repeat(34 * 1024);
const BATCH = 8;
/** More than the disks below hold: a relay that accepts this many batches never noticed its disk fill. */
const MAX_BATCHES_TO_FILL = 200;
/** Quotas lifted so that the disk, not a quota, is what refuses. */
const ROOMY = { max_sender_bytes: 1024 * MiB, max_queue_bytes: 1024 * MiB, max_account_bytes: 1024 * MiB, max_sender_items: 100_000, max_queue_items: 100_000 };
const FULL_REFUSAL = { error: "the relay's disk is full: try again later", code: 'STORE_FULL' };
const SYNC_REFUSAL = { error: "the relay's disk failed to sync: try again later", code: 'STORE_SYNC_FAILED' };

async function health(relay: DrillRelay): Promise<{ status: number; body: { status: string; reason?: string } }> {
  const response = await fetch(new URL('/healthz', relay.url));
  return { status: response.status, body: (await response.json()) as { status: string; reason?: string } };
}

async function diskRefusals(relay: DrillRelay, fault: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', relay.url))).text();
  const line = text.split('\n').find((l) => l.startsWith(`agentmbx_store_disk_refusals_total{fault="${fault}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

function stderrLines(relay: DrillRelay, pattern: RegExp): string[] {
  return relay.child
    .stderr()
    .split('\n')
    .filter((l) => pattern.test(l));
}

/** Composes and pushes large messages in batches until the relay answers anything but 200; returns that answer. */
async function pushUntilRefused(relay: DrillRelay, sender: DrillSender) {
  for (let batches = 0; batches < MAX_BATCHES_TO_FILL; batches += 1) {
    if (sender.pending().length < BATCH) sender.compose(BATCH, Date.now(), PADDING);
    const answer = await sender.push(relay, sender.pending().slice(0, BATCH));
    if (answer.status !== 200) return answer;
  }
  throw new Error(`${MAX_BATCHES_TO_FILL} batches were accepted: the disk never filled`);
}

/** Pushes every pending message (each accepted or a duplicate of an earlier commit). */
async function pushAll(relay: DrillRelay, sender: DrillSender): Promise<void> {
  for (let pending = sender.pending(); pending.length > 0; pending = sender.pending()) {
    const answer = await sender.push(relay, pending.slice(0, BATCH));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
  }
}

/** A fresh receiver pulls everything from 0: nothing accepted is lost, duplicated or changed. */
async function assertNothingLost(relay: DrillRelay, sender: DrillSender): Promise<void> {
  const receiver = new DrillReceiver(sender.target);
  while (await receiver.pullPage(relay, 100));
  assert.deepEqual(check([sender], receiver), { lost: [], duplicated: [], phantom: [] });
}

const skip = tmpfsSkipReason();

test('a full disk: pushes answer 507 STORE_FULL, /healthz names it, pulls still work; more space heals it without a restart; a SIGKILL while full loses nothing', {
  skip,
  timeout: 180_000,
}, async () => {
  const disk = mountTmpfs(24 * MiB);
  const storeDir = join(disk.dir, 'store');
  let relay = await spawnDrillRelay(storeDir, { config: ROOMY });
  const at = { url: relay.url, clock: { nowMs: () => Date.now() } };
  const sender = new DrillSender(await enrolledHost(at, 'laptop'), await enrolledHost(at, 'desk'));

  const refused = await pushUntilRefused(relay, sender);
  assert.equal(refused.status, 507);
  assert.deepEqual(refused.body, FULL_REFUSAL);
  assert.equal(refused.retryAfter, '30');
  assert.ok(sender.accepted.size > 50, `${sender.accepted.size} accepted before the disk filled`);
  const unhealthy = await health(relay);
  assert.equal(unhealthy.status, 503);
  assert.match(
    unhealthy.body.reason ?? '',
    /^the store refuses writes: the disk holding the relay store is full \(\d+(\.\d)? (bytes|KiB|MiB) free\): free some space on it; writes resume by themselves$/,
  );
  assert.ok((await diskRefusals(relay, 'full')) > 0, 'the refusals are counted');
  await assertNothingLost(relay, sender); // reads work while writes are refused
  const fullLine = new RegExp(`^agentmbx relay: writes refused, store in ${storeDir}: the disk holding the relay store is full \\(.* free\\)`);
  assert.equal(stderrLines(relay, fullLine).length, 1, relay.child.stderr());
  assert.doesNotMatch(relay.child.stderr(), /internal error/);

  // more room: the next write succeeds and the relay is healthy again, without a restart
  disk.resize(32 * MiB);
  const healed = await sender.push(relay, sender.pending().slice(0, BATCH));
  assert.equal(healed.status, 200);
  assert.deepEqual((await health(relay)).body, { status: 'ok' });
  assert.equal(stderrLines(relay, new RegExp(`^agentmbx relay: the store in ${storeDir} writes again \\(.* free\\)$`)).length, 1);

  // full again, then killed while full; restarted once the disk has room
  assert.equal((await pushUntilRefused(relay, sender)).status, 507);
  assert.equal(stderrLines(relay, fullLine).length, 2, 'one line per change of state');
  const epoch = relay.epoch;
  relay.child.kill('SIGKILL');
  assert.equal(await relay.child.exited, 'SIGKILL');
  disk.resize(128 * MiB);
  relay = await spawnDrillRelay(storeDir, { config: ROOMY });
  assert.equal(relay.epoch, epoch, 'the restart keeps the epoch: the store is intact');
  await assertNothingLost(relay, sender);
  await pushAll(relay, sender);
  await assertNothingLost(relay, sender);
  assert.equal(sender.accepted.size, sender.messages.length);
});

test('a failed fsync: every call answers 503 STORE_SYNC_FAILED until a restart, /healthz says to check the disk, nothing accepted is lost', {
  timeout: 60_000,
}, async () => {
  const storeDir = tempDir('agentmbx-drill-');
  // the first syncs go to start-up (heartbeat, sweep), the enrolments (fewer than 10) and the first
  // pushes; from the 16th on every sync fails
  let relay = await spawnDrillRelay(storeDir, { failpoint: 'relay.wal-sync@16' });
  const at = { url: relay.url, clock: { nowMs: () => Date.now() } };
  const sender = new DrillSender(await enrolledHost(at, 'laptop'), await enrolledHost(at, 'desk'));
  sender.compose(40, Date.now());

  let refused = null;
  for (const message of sender.messages) {
    const answer = await sender.push(relay, [message]);
    if (answer.status !== 200) {
      refused = answer;
      break;
    }
  }
  assert.ok(refused !== null, 'the armed sync failed a push');
  assert.ok(sender.accepted.size > 0, 'pushes were accepted before the sync failed');
  assert.equal(refused.status, 503);
  assert.deepEqual(refused.body, SYNC_REFUSAL);
  assert.equal(refused.retryAfter, '30');
  const next = await sender.push(relay, sender.pending().slice(0, 1));
  assert.deepEqual([next.status, next.body], [503, SYNC_REFUSAL], 'it does not heal by itself');
  const receiver = new DrillReceiver(sender.target);
  await assert.rejects(receiver.pullPage(relay, 10), /pull answered 503/, 'reads too: they could hand out what never reached the disk');
  const unhealthy = await health(relay);
  assert.deepEqual(unhealthy, {
    status: 503,
    body: { status: 'unhealthy', reason: 'the store refuses writes: the relay store could not sync its log to disk: check the disk, then restart the relay' },
  });
  assert.ok((await diskRefusals(relay, 'sync')) >= 2);
  assert.equal(
    stderrLines(relay, /^agentmbx relay: writes refused, store in .*: the relay store could not sync its log to disk: check the disk, then restart the relay$/)
      .length,
    1,
    relay.child.stderr(),
  );

  relay.child.kill('SIGKILL');
  await relay.child.exited;
  relay = await spawnDrillRelay(storeDir);
  await pushAll(relay, sender);
  await assertNothingLost(relay, sender);
  assert.deepEqual((await health(relay)).body, { status: 'ok' });
});

test('a relay started on a full disk refuses with one line that says so', { skip, timeout: 30_000 }, async () => {
  const disk = mountTmpfs(4 * MiB);
  disk.fill();
  const started = await runCli(['relay', 'serve', '--store-dir', join(disk.dir, 'store'), '--port', '0', '--bind', '127.0.0.1']);
  assert.equal(started.code, 6);
  assert.match(started.stderr, /^agentmbx: the disk is full: free some space on it, then try again \(.+\)\n$/);
});
