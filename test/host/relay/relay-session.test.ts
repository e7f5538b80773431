// Enrolment and enc-ad recovery against a real relay (design §1, §8, T168): a restart changes
// nothing, a restore (new epoch, enrolments lost) is followed by re-enrolment, re-push and re-pull;
// a relay key change stops relay use until the owner confirms the key; our rotation reaches the
// relay and the enc-ad is published again; clock skew is named; a rolled-back peer ad is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { listInbox } from '../../../src/host/mailbox.ts';
import { applyPeerRotation, rotateHost } from '../../../src/host/core/rotation.ts';
import { sendMail } from '../../../src/host/send.ts';
import { acceptPeerEncAd, fetchPeerEncKeyViaRelay } from '../../../src/host/relay-client/enc-ads.ts';
import { RelayPinError, setRelay } from '../../../src/host/relay-client/pin.ts';
import { ensureSession, relayApiFor } from '../../../src/host/relay-client/session.ts';
import { fingerprint } from '../../../src/protocol/fingerprint.ts';
import { isPlainObject } from '../../../src/protocol/validate.ts';
import { backupRelayStore } from '../../../src/relay/ops/backup.ts';
import { restoreRelayStore } from '../../../src/relay/ops/restore.ts';
import { tempDir } from '../../helpers/processes.ts';
import { signedEncAd, startTestRelay } from '../../helpers/relay-fixture.ts';
import { TestClock } from '../../helpers/clock.ts';
import { makeHost } from '../fixtures.ts';
import { rawHost, relayWorld, restartRelay, tick, tickUntilRow, type RelayWorld } from './relay-fixtures.ts';

/** Both daemons tick `n` times, a minute apart. */
async function run(world: RelayWorld, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await tick(world.a);
    await tick(world.b);
    world.clock.now += 60 * 1000;
  }
}

test('after a relay restart the hosts carry on in the same epoch', async () => {
  const world = await relayWorld();
  await tick(world.b);
  const first = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'before', body: 'x' }).id;
  await tickUntilRow(world, world.a, first, 'relay-accepted');
  const epoch = world.a.node.store.relay.get()?.epoch;
  assert.ok(typeof epoch === 'string');
  await restartRelay(world);
  const second = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'after', body: 'x' }).id;
  await run(world, 4);
  assert.deepEqual(
    listInbox(world.b.node, 'bob')
      .map((m) => m.id)
      .sort(),
    [first, second].sort(),
  );
  assert.equal(world.a.node.store.relay.get()?.epoch, epoch);
  assert.equal(world.a.node.store.relay.get()?.epoch_changed_at, null);
});

test('after a restore (new epoch, enrolments gone) hosts re-enrol, senders re-push and receivers re-pull', async () => {
  const world = await relayWorld();
  const backup = join(tempDir('mbx-relay-backup-'), 'relay.db');
  await backupRelayStore({ storeDir: world.relay.dir, file: backup, nowMs: world.clock.nowMs });
  await tick(world.b);
  const oldEpoch = world.b.node.store.relay.get()?.epoch;
  const m1 = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'pulled before', body: 'x' }).id;
  await tickUntilRow(world, world.a, m1, 'relay-accepted');
  await tick(world.b);
  const m2 = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'lost by the restore', body: 'x' }).id;
  await tickUntilRow(world, world.a, m2, 'relay-accepted');
  await world.relay.stop();
  const restored = await restoreRelayStore({ storeDir: world.relay.dir, file: backup, env: {}, nowMs: world.clock.nowMs });
  assert.notEqual(restored.epoch, oldEpoch);
  await restartRelay(world);
  await run(world, 6);
  assert.deepEqual(
    listInbox(world.b.node, 'bob')
      .map((m) => m.id)
      .sort(),
    [m1, m2].sort(),
    'each once',
  );
  for (const host of [world.a, world.b]) {
    const relay = host.node.store.relay.get();
    assert.equal(relay?.epoch, restored.epoch);
    assert.equal(relay?.state, 'ok');
    assert.ok(relay?.epoch_changed_at !== null);
  }
  const row2 = world.a.node.store.outbox.forMessage(m2)[0];
  assert.ok(row2?.state === 'settled' || row2?.relay_epoch === restored.epoch, `m2 re-pushed into the new epoch: ${JSON.stringify(row2)}`);
  // enrolled again under the right key, with the enc-ad published again
  const info = await relayApiFor(world.a.node, world.relay.url).info();
  const you = isPlainObject(info.body) && isPlainObject(info.body.you) ? info.body.you : {};
  assert.equal(you.pubkey, world.a.node.keys.hostKey.publicKey);
  assert.ok(isPlainObject(you.enc_ad) && you.enc_ad.enc_pub === world.a.node.keys.enc.publicKey);
});

test('a delivery receipt the relay lost in a restore is sent again when its sender re-pushes the mail', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  const backup = join(tempDir('mbx-relay-backup-'), 'relay.db');
  await tick(b);
  await backupRelayStore({ storeDir: world.relay.dir, file: backup, nowMs: world.clock.nowMs });
  const id = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'receipt lost', body: 'x' }).id;
  await tickUntilRow(world, a, id, 'relay-accepted');
  // beta takes it and hands its receipt to the relay; alpha never pulls it before the restore
  for (let i = 0; i < 4 && b.node.store.outbox.countByState('handed-over', 'receipt') === 0; i++) {
    await tick(b);
    world.clock.now += 60 * 1000;
  }
  assert.equal(b.node.store.outbox.countByState('handed-over', 'receipt'), 1);
  // the restore comes days later: a receipt sent again is not given up at its first 72 h deadline
  world.clock.now += 4 * 24 * 60 * 60 * 1000;
  await world.relay.stop();
  await restoreRelayStore({ storeDir: world.relay.dir, file: backup, env: {}, nowMs: world.clock.nowMs });
  await restartRelay(world);
  await run(world, 5);
  assert.equal(a.node.store.outbox.forMessage(id)[0]?.state, 'settled', 'the re-pushed mail drew its receipt again');
  assert.deepEqual(
    listInbox(b.node, 'bob').map((m) => m.id),
    [id],
    'once',
  );
});

test('a relay key change stops relay use until the owner confirms the new key', async () => {
  const world = await relayWorld();
  await tick(world.b);
  const oldKey = world.relay.service.relayPubkey;
  await restartRelay(world, tempDir('mbx-other-relay-'));
  const newKey = world.relay.service.relayPubkey;
  assert.notEqual(newKey, oldKey);
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'must not go', body: 'x' });
  await run(world, 3);
  const relay = world.a.node.store.relay.get();
  assert.equal(relay?.state, 'key-mismatch');
  assert.equal(relay?.seen_pubkey, newKey);
  assert.equal(world.a.node.store.outbox.forMessage(id)[0]?.state, 'queued');
  assert.notEqual(world.a.node.store.outbox.forMessage(id)[0]?.transport, 'relay');
  await assert.rejects(
    setRelay(world.a.node, world.relay.url),
    (err: unknown) => err instanceof RelayPinError && /changed its key/.test(err.message) && err.kind === null,
  );
  await assert.rejects(setRelay(world.a.node, world.relay.url, fingerprint(oldKey)), /presents key/);
  await assert.rejects(setRelay(world.a.node, world.relay.url, 'not-a-print'), (err: unknown) => err instanceof RelayPinError && err.kind === 'invalid');
  for (const host of [world.a, world.b]) await setRelay(host.node, world.relay.url, fingerprint(newKey));
  await run(world, 4);
  assert.equal(world.a.node.store.relay.get()?.state, 'ok');
  assert.deepEqual(
    listInbox(world.b.node, 'bob').map((m) => m.id),
    [id],
  );
});

test('our own rotation reaches the relay and the enc-ad is published again for the new key', async () => {
  const world = await relayWorld();
  await run(world, 1);
  const oldPub = world.a.node.keys.hostKey.publicKey;
  rotateHost(world.a.node);
  assert.notEqual(world.a.node.keys.hostKey.publicKey, oldPub);
  await tick(world.a);
  const relay = world.a.node.store.relay.get();
  assert.equal(relay?.state, 'ok');
  assert.equal(relay?.session_host_pubkey, world.a.node.keys.hostKey.publicKey);
  assert.equal(world.a.node.store.relay.receivedThrough(relay?.url ?? '', relay?.epoch ?? ''), 0);
  const lookup = await rawHost(world, world.b.node).api.encAd(world.a.node.keys.hostKey.publicKey);
  assert.equal(lookup.status, 200);
  const ad = isPlainObject(lookup.body) && isPlainObject(lookup.body.ad) ? lookup.body.ad : {};
  assert.equal(ad.enc_pub, world.a.node.keys.enc.publicKey, 'the new enc key is advertised');
  assert.equal(ad.host_pubkey, world.a.node.keys.hostKey.publicKey);
});

test('a relay refusing our hops while its Date header is far from our clock is reported as clock-skew', async () => {
  const relayClock = new TestClock(Date.now());
  const relay = await startTestRelay({ clock: relayClock });
  const hostClock = new TestClock(Date.now() + 10 * 60 * 1000);
  const node = makeHost('skewed', hostClock, ['sam']);
  await setRelay(node, relay.url);
  const result = await ensureSession(node);
  assert.equal(result.ok, false);
  assert.equal(node.store.relay.get()?.state, 'clock-skew');
  assert.match(node.store.relay.get()?.detail ?? '', /clock/);
});

test('a peer enc key comes through the relay only signed by the pinned key, and a rolled-back ad is refused', async () => {
  const world = await relayWorld();
  await tick(world.b);
  const peer = world.a.node.store.peers.get('beta') ?? assert.fail('no peer');
  const session = await ensureSession(world.a.node);
  assert.ok(session.ok);
  assert.equal(await fetchPeerEncKeyViaRelay(world.a.node, session.session.api, peer), world.b.node.keys.enc.publicKey);
  const beta = rawHost(world, world.b.node);
  const older = signedEncAd(beta, world.clock.now - 60_000, undefined, rawHost(world, world.b.node).enc.publicKey);
  assert.throws(() => acceptPeerEncAd(world.a.node, peer, older.ad, older.sig), /rollback/);
  const stranger = rawHost(world, world.a.node);
  const forged = signedEncAd(stranger, world.clock.now);
  assert.throws(() => acceptPeerEncAd(world.a.node, peer, { ...forged.ad, host: 'beta' }, forged.sig), /refused|pinned/);
});

test('mail a peer sent under its new key before we learned of its rotation leaves the quarantine when the rotation arrives', async () => {
  const world = await relayWorld();
  await run(world, 1);
  const rotation = rotateHost(world.a.node);
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'signed with the new key', body: 'x' });
  await tickUntilRow(world, world.a, id, 'relay-accepted');
  await tick(world.b);
  assert.deepEqual(
    world.b.node.store.relay.quarantined().map((q) => [q.item_id, q.reason]),
    [[id, 'sender is not a paired host']],
  );
  assert.equal(applyPeerRotation(world.b.node, rotation), 'rotated'); // the record arrives (over the LAN)
  assert.deepEqual(
    listInbox(world.b.node, 'bob').map((m) => m.id),
    [id],
  );
  assert.equal(world.b.node.store.relay.quarantineCount(), 0);
});

/** Copies the relay's store files (the relay stopped) from `from` to `to`, replacing what is there. */
function copyStore(from: string, to: string): void {
  for (const suffix of ['', '-wal', '-shm']) {
    rmSync(join(to, `relay.db${suffix}`), { force: true });
    if (existsSync(join(from, `relay.db${suffix}`))) copyFileSync(join(from, `relay.db${suffix}`), join(to, `relay.db${suffix}`));
  }
}

test('a store that went back in time without a new epoch (head_seq below our position) is re-pulled and re-pushed', async () => {
  const world = await relayWorld();
  await run(world, 1);
  const snapshot = tempDir('mbx-relay-snapshot-');
  await world.relay.stop();
  copyStore(world.relay.dir, snapshot);
  await restartRelay(world);
  const epoch = world.relay.service.epoch;
  const m1 = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'before the rewind', body: 'x' }).id;
  await run(world, 4); // m1 delivered, its receipt back at alpha: both positions are past the snapshot
  assert.equal(world.a.node.store.outbox.forMessage(m1)[0]?.state, 'settled');
  const m2 = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'lost by the rewind', body: 'x' }).id;
  await tickUntilRow(world, world.a, m2, 'relay-accepted');
  await world.relay.stop();
  copyStore(snapshot, world.relay.dir);
  await restartRelay(world);
  assert.equal(world.relay.service.epoch, epoch, 'the copy kept the epoch');
  await run(world, 4);
  assert.deepEqual(
    listInbox(world.b.node, 'bob')
      .map((m) => m.id)
      .sort(),
    [m1, m2].sort(),
    'each once',
  );
  assert.equal(world.a.node.store.outbox.forMessage(m2)[0]?.state, 'settled', 're-pushed, delivered, receipted');
  // alpha's pull saw head_seq below its position (and re-pushed m2); beta may never notice, as the
  // relay's seq floor puts the re-pushed item above beta's position.
  assert.ok(world.a.node.store.relay.get()?.epoch_changed_at !== null, 'the rewind was noted');
});

test('the enc-ad is refreshed daily with a 30-day life', async () => {
  const world = await relayWorld();
  await tick(world.a);
  const adOf = async (): Promise<Record<string, unknown>> => {
    const info = await relayApiFor(world.a.node, world.relay.url).info();
    const you = isPlainObject(info.body) && isPlainObject(info.body.you) ? info.body.you : {};
    return isPlainObject(you.enc_ad) ? you.enc_ad : {};
  };
  const first = await adOf();
  assert.equal(Date.parse(String(first.exp)), world.clock.now + 30 * 24 * 60 * 60 * 1000);
  world.clock.now += 24 * 60 * 60 * 1000 - 1;
  await tick(world.a);
  assert.deepEqual(await adOf(), first, 'not before a day');
  world.clock.now += 1;
  await tick(world.a);
  assert.equal(Date.parse(String((await adOf()).exp)), world.clock.now + 30 * 24 * 60 * 60 * 1000);
});
