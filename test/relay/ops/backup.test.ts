// `agentmbx relay backup` (design §5): an online copy while the relay serves and a writer keeps
// going, checked, private, never overwriting; --keep prunes older backups of the same pattern.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { backupPattern, backupRelayStore } from '../../../src/relay/ops/backup.ts';
import { RelayOpsError } from '../../../src/relay/ops/ops-error.ts';
import { openSqliteRelayStore, RELAY_DB_FILE, SCHEMA_VERSION } from '../../../src/relay/store/sqlite/index.ts';
import { readOpsLogOfStore } from '../../../src/relay/store/sqlite/store-files.ts';
import { enrolledHost, envelopeItem, sealedEnvelope, startTestRelay } from '../../helpers/relay-fixture.ts';
import { runCli, tempDir } from '../../helpers/processes.ts';

test('a backup taken by another process while a writer keeps pushing is a healthy store', async () => {
  const relay = await startTestRelay({ config: { pushes_per_minute: 1_000_000 } });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  let stop = false;
  let accepted = 0;
  let acceptedDuringBackup = 0;
  let backupRunning = false;
  const writer = (async () => {
    while (!stop) {
      const env = sealedEnvelope(a, b, relay.clock.now);
      const result = (await a.api.push([envelopeItem(env.id, [{ host: b, wire: env.wire }])])).body['results'] as Array<{ status: string }>;
      assert.equal(result[0]?.status, 'accepted');
      accepted += 1;
      if (backupRunning) acceptedDuringBackup += 1;
    }
  })();
  while (accepted < 5) await new Promise((resolve) => setImmediate(resolve));

  const file = join(tempDir(), 'relay-backup-1.db');
  backupRunning = true;
  const cli = await runCli(['relay', 'backup', file, '--store-dir', relay.dir]);
  backupRunning = false;
  stop = true;
  await writer;
  assert.equal(cli.code, 0, cli.stderr);
  assert.ok(acceptedDuringBackup > 0, 'the relay kept accepting while the backup ran');

  const receipt = JSON.parse(cli.stdout) as Record<string, unknown> & { counts: Record<string, number> };
  const bytes = readFileSync(file);
  assert.equal(receipt['file'], file);
  assert.equal(receipt['bytes'], bytes.length);
  assert.equal(receipt['sha256'], createHash('sha256').update(bytes).digest('hex'));
  assert.equal(receipt['epoch'], relay.service.epoch);
  assert.equal(receipt['relay_fingerprint'], relay.service.fingerprint);
  assert.equal(receipt['schema_version'], SCHEMA_VERSION);
  assert.equal(receipt.counts['live_enrolments'], 2);
  assert.ok((receipt.counts['items'] ?? 0) >= 5 && (receipt.counts['items'] ?? 0) <= accepted);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(join(file, '..')), ['relay-backup-1.db'], 'no temporary file is left');

  const db = new DatabaseSync(file, { readOnly: true });
  assert.deepEqual(
    db
      .prepare('PRAGMA integrity_check')
      .all()
      .map((row) => Object.values(row)[0]),
    ['ok'],
  );
  assert.equal(Object.values(db.prepare('PRAGMA journal_mode').get() ?? {})[0], 'delete', 'one self-contained file');
  db.close();
  const opened = join(tempDir(), 'store');
  mkdirSync(opened);
  copyFileSync(file, join(opened, RELAY_DB_FILE));
  const store = await openSqliteRelayStore({ dir: opened, relayPubkey: relay.service.relayPubkey });
  const page = await store.read((tx) => tx.items.pull(b.key.publicKey, 0, 1_000, 1 << 30));
  assert.equal(page.items.length, receipt.counts['items']);
  await store.close();

  const [logged] = readOpsLogOfStore(relay.dir, 1);
  assert.equal(logged?.kind, 'backup');
  assert.equal(logged?.detail['sha256'], receipt['sha256']);
});

test('a backup never overwrites a file', async () => {
  const relay = await startTestRelay();
  const file = join(tempDir(), 'taken.db');
  writeFileSync(file, 'precious');
  await assert.rejects(
    backupRelayStore({ storeDir: relay.dir, file }),
    (error: unknown) => error instanceof RelayOpsError && /already exists/.test(error.message),
  );
  assert.equal(readFileSync(file, 'utf8'), 'precious');
  const cli = await runCli(['relay', 'backup', file, '--store-dir', relay.dir]);
  assert.equal(cli.code, 1);
  assert.match(cli.stderr, /^agentmbx: .*taken\.db already exists/);
  assert.doesNotMatch(cli.stderr, /\n\s+at /, 'no stack trace');
});

test('--keep keeps the newest backups of the same name pattern', async () => {
  const relay = await startTestRelay();
  const dir = tempDir();
  writeFileSync(join(dir, 'notes.txt'), 'unrelated');
  writeFileSync(join(dir, 'relay-old.db'), 'no digit after the prefix: not a backup of this pattern');
  const names = ['relay-2026-12-01.db', 'relay-2026-12-02.db', 'relay-2026-12-03.db'];
  const pruned: string[][] = [];
  for (const name of names) pruned.push((await backupRelayStore({ storeDir: relay.dir, file: join(dir, name), keep: 2 })).pruned);
  assert.deepEqual(pruned, [[], [], [join(dir, 'relay-2026-12-01.db')]]);
  assert.deepEqual(readdirSync(dir).sort(), ['notes.txt', 'relay-2026-12-02.db', 'relay-2026-12-03.db', 'relay-old.db']);
  assert.ok(backupPattern('relay-2026-12-03.db').test('relay-2027-01-01.db'));
  assert.ok(!backupPattern('relay-2026-12-03.db').test('relay-2027-01-01.db.txt'));
});
