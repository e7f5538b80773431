// `agentmbx relay restore` and `rotate-epoch` (design §5, protocol.md §7.14): refusals, the rollback
// copy, the carry-forward of what only ever restricts, the new epoch, and the operations log.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { fingerprint } from '../../../src/protocol/fingerprint.ts';
import { backupRelayStore } from '../../../src/relay/ops/backup.ts';
import { rotateEpochOffline } from '../../../src/relay/ops/epoch.ts';
import { RelayOpsError } from '../../../src/relay/ops/ops-error.ts';
import { restoreRelayStore } from '../../../src/relay/ops/restore.ts';
import { MIGRATIONS, readStoreMeta, RELAY_DB_FILE, openSqliteRelayStore, type Migration } from '../../../src/relay/store/sqlite/index.ts';
import { enrolledHost, pushAccepted, startTestRelay, testHost, type TestHost, type TestRelay } from '../../helpers/relay-fixture.ts';
import { TestClock } from '../../helpers/clock.ts';
import { runCli, tempDir } from '../../helpers/processes.ts';

function rejoin(relay: TestRelay, host: TestHost): TestHost {
  return { ...testHost(relay, host.name, host.key), enc: host.enc };
}

/** A stopped relay's store with one enrolled host and a backup of it. */
async function storeWithBackup(clock = new TestClock()) {
  const dir = tempDir();
  const relay = await startTestRelay({ dir, clock });
  await enrolledHost(relay, 'laptop');
  await relay.stop();
  const file = join(tempDir(), 'backup.db');
  await backupRelayStore({ storeDir: dir, file });
  return { dir, file, epoch: relay.service.epoch, clock };
}

function refusedWith(pattern: RegExp) {
  return (error: unknown) => error instanceof RelayOpsError && pattern.test(error.message) && !/\n\s+at /.test(error.message);
}

function assertUntouched(dir: string, epoch: string): void {
  assert.equal(readStoreMeta(dir).epoch, epoch, 'the live store is unchanged');
  assert.deepEqual(
    readdirSync(dir).filter((name) => name.startsWith('.restore') || name.includes('before-restore')),
    [],
    'no staging or rollback left behind',
  );
}

test('restore and rotate-epoch are refused while a relay serves the store', async () => {
  const { dir, file, epoch, clock } = await storeWithBackup();
  const relay = await startTestRelay({ dir, clock });
  await assert.rejects(restoreRelayStore({ storeDir: dir, file, env: {} }), refusedWith(/a relay is serving the store .*: stop it before restoring/));
  await assert.rejects(rotateEpochOffline({ storeDir: dir }), refusedWith(/stop it before rotating the epoch/));
  const cli = await runCli(['relay', 'rotate-epoch', '--store-dir', dir]);
  assert.equal(cli.code, 1);
  assert.match(cli.stderr, /^agentmbx: a relay is serving the store/);
  await relay.stop();
  assertUntouched(dir, epoch);

  const rotated = await runCli(['relay', 'rotate-epoch', '--store-dir', dir]);
  assert.equal(rotated.code, 0, rotated.stderr);
  const now = readStoreMeta(dir).epoch;
  assert.equal(rotated.stdout, `epoch rotated: ${epoch} -> ${now}\n`);
  const log = JSON.parse((await runCli(['relay', 'log', '--json', '--store-dir', dir])).stdout) as Array<{ kind: string; detail: Record<string, unknown> }>;
  assert.equal(log[0]?.kind, 'epoch-rotated');
  assert.deepEqual(log[0]?.detail, { reason: 'operator', from: epoch, to: now });
});

test('restore refuses files that are not relay stores, newer schemas and other relay keys', async () => {
  const { dir, epoch } = await storeWithBackup();
  const files = tempDir();
  const junk = join(files, 'junk.db');
  writeFileSync(junk, 'this is not SQLite at all, just some bytes that are long enough to look like a header');
  const empty = join(files, 'empty.db');
  writeFileSync(empty, '');
  const plain = join(files, 'plain.db');
  const db = new DatabaseSync(plain);
  db.exec('CREATE TABLE notes (x TEXT)');
  db.close();
  for (const file of [junk, empty, plain]) {
    await assert.rejects(restoreRelayStore({ storeDir: dir, file, env: {} }), refusedWith(/is not a relay store/), file);
  }
  await assert.rejects(restoreRelayStore({ storeDir: dir, file: join(files, 'missing.db'), env: {} }), refusedWith(/does not exist/));

  const newerDir = tempDir();
  const extra: Migration = {
    version: MIGRATIONS.length + 1,
    name: 'test: future',
    up(d) {
      d.exec('CREATE TABLE future (x INTEGER)');
    },
  };
  const relayPubkey = readStoreMeta(dir).relayPubkey;
  await (await openSqliteRelayStore({ dir: newerDir, relayPubkey, migrations: [...MIGRATIONS, extra] })).close();
  const newer = new DatabaseSync(join(newerDir, RELAY_DB_FILE));
  newer.exec('PRAGMA wal_checkpoint(TRUNCATE)'); // relay.db alone is the whole store once its WAL is folded in
  newer.close();
  await assert.rejects(restoreRelayStore({ storeDir: dir, file: join(newerDir, RELAY_DB_FILE), env: {} }), refusedWith(/is newer than this agentmbx/));

  const other = await storeWithBackup();
  const otherKey = readStoreMeta(other.dir).relayPubkey;
  const cli = await runCli(['relay', 'restore', other.file, '--store-dir', dir]);
  assert.equal(cli.code, 1);
  assert.equal(cli.stderr, `agentmbx: ${other.file} is a backup of relay key ${fingerprint(otherKey)}, not of this relay's key ${fingerprint(relayPubkey)}\n`);
  const keyText = readFileSync(join(dir, 'relay.key'), 'utf8').trim();
  assert.ok(!cli.stderr.includes(keyText), 'never key material');
  assertUntouched(dir, epoch);
});

test('restore keeps a rollback copy, carries forward what restricts, and rotates the epoch', async () => {
  const clock = new TestClock();
  const dir = tempDir();
  const first = await startTestRelay({ dir, clock });
  const [a, b, c] = [await enrolledHost(first, 'laptop'), await enrolledHost(first, 'desk'), await enrolledHost(first, 'tablet')];
  const s1 = await pushAccepted(a, b, first.clock.now);
  const s2 = await pushAccepted(a, b, first.clock.now);
  await first.stop();
  const file = join(tempDir(), 'before.db');
  await backupRelayStore({ storeDir: dir, file, nowMs: clock.nowMs });

  // after the backup: b acks everything, more mail flows, c is revoked, b publishes a sender list and a newer enc-ad
  clock.advance(1_000);
  const live = await startTestRelay({ dir, clock });
  const [a2, b2] = [rejoin(live, a), rejoin(live, b)];
  const s3 = await pushAccepted(a2, b2, live.clock.now);
  assert.equal((await b2.api.ack(s3, live.service.epoch)).status, 200);
  const s4 = await pushAccepted(a2, b2, live.clock.now);
  await live.service.core.context.store.transaction(async (tx) => {
    const enrolment = await tx.enrolments.get(c.key.publicKey);
    assert.ok(enrolment);
    await tx.enrolments.put({ ...enrolment, revokedAt: clock.now });
    await tx.hostRecords.putSenderList({ targetPubkey: b.key.publicKey, senders: [a.key.publicKey], iat: clock.now, record: '{"list":"b"}', sig: 'sig-b' });
    await tx.hostRecords.putEncAd({
      hostPubkey: b.key.publicKey,
      encPub: b.enc.publicKey,
      version: 2,
      record: '{"ad":"new"}',
      sig: 'sig-ad',
      iat: clock.now,
      exp: clock.now + 1_000,
      at: clock.now,
      v1Sig: null,
    });
  });
  await live.stop();

  clock.advance(1_000);
  // in process, on the test clock (the drill in test/drills/relay-restore.test.ts runs the CLI)
  const receipt = await restoreRelayStore({ storeDir: dir, file, env: {}, nowMs: clock.nowMs });
  assert.ok(receipt.carried_forward !== null && receipt.rollback !== null);
  assert.equal(receipt.previous_epoch, live.service.epoch);
  assert.equal(receipt.backup_epoch, first.service.epoch);
  assert.notEqual(receipt.epoch, first.service.epoch);
  assert.deepEqual(receipt.carried_forward, { revocations: 1, sender_lists: 1, enc_ads: 1, seqs: 1, acked: 1, acked_items_deleted: 2 });
  const rollbackDir = tempDir();
  copyFileSync(receipt.rollback, join(rollbackDir, RELAY_DB_FILE));
  assert.equal(readStoreMeta(rollbackDir).epoch, live.service.epoch, 'the replaced store is kept as it was');
  assert.deepEqual(
    readdirSync(dir).filter((name) => name.startsWith('.restore')),
    [],
  );

  clock.advance(1_000);
  const restored = await startTestRelay({ dir, clock });
  assert.equal(restored.service.epoch, receipt.epoch);
  assert.equal(restored.service.epochRotatedAtStart, null, 'the restore wrote a fresh heartbeat: no second rotation');
  const [a3, b3] = [rejoin(restored, a), rejoin(restored, b)];
  const stale = await b3.api.pull(0, undefined, live.service.epoch);
  assert.equal(stale.status, 409);
  assert.equal(stale.body['epoch'], receipt.epoch);
  const page = (await b3.api.pull(0)).body as { head_seq: number; items: Array<{ seq: number }> };
  assert.deepEqual(page.items, [], 'mail acked after the backup is not delivered again');
  assert.equal(page.head_seq, s4, "the live store's higher next_seq came over");
  assert.ok(s1 < s2 && s2 < s3);
  assert.ok((await pushAccepted(a3, b3, restored.clock.now)) > s4, 'new seqs stay above everything handed out before');
  await restored.service.core.context.store.read(async (tx) => {
    assert.notEqual((await tx.enrolments.get(c.key.publicKey))?.revokedAt, null, 'the revocation came over');
    assert.equal((await tx.hostRecords.senderList(b.key.publicKey))?.sig, 'sig-b');
    assert.equal((await tx.hostRecords.encAd(b.key.publicKey))?.sig, 'sig-ad');
  });
  await restored.stop();

  const text = (await runCli(['relay', 'log', '--store-dir', dir])).stdout.split('\n');
  assert.match(text[0] ?? '', /^\S+Z restore file=.*before\.db backup_epoch=\S+ previous_epoch=\S+ epoch=\S+$/);
  assert.match(text[1] ?? '', / backup file=.*before\.db/, "the live store's log came over too");
  assert.ok(existsSync(receipt.rollback));
});

test('a live store that cannot be read is refused; without one, the backup is restored as it is', async () => {
  const { dir, file, epoch } = await storeWithBackup();
  for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, `${RELAY_DB_FILE}${suffix}`), { force: true });
  writeFileSync(join(dir, RELAY_DB_FILE), 'damaged beyond repair, and long enough to fill an SQLite header block');
  await assert.rejects(restoreRelayStore({ storeDir: dir, file, env: {} }), refusedWith(/not a relay store.*move the relay\.db files out of/));
  rmSync(join(dir, RELAY_DB_FILE));
  const receipt = await restoreRelayStore({ storeDir: dir, file, env: {} });
  assert.deepEqual([receipt.rollback, receipt.carried_forward, receipt.previous_epoch, receipt.backup_epoch], [null, null, null, epoch]);
  assert.equal(readStoreMeta(dir).epoch, receipt.epoch);
});
