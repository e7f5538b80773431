// The home: private modes, refusal of symlinks and open files; the store: WAL, refusal of a newer
// schema, migration of an older one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, renameSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { homePaths, initHome, loadKeys, readConfig } from '../../src/host/core/identity.ts';
import { openNode, closeNode } from '../../src/host/open-node.ts';
import { HostStore } from '../../src/host/store/host-store.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/host/store/migrations/index.ts';
import { runCli, tempDir } from '../helpers/processes.ts';

function freshHome(): string {
  const home = join(tempDir('mbx-id-'), 'home');
  initHome(home, 'alpha', 7373);
  return home;
}

test('init makes a 0700 home with 0600 key files, and refuses to run twice', () => {
  const home = freshHome();
  const paths = homePaths(home);
  assert.equal(statSync(home).mode & 0o777, 0o700);
  for (const file of [paths.hostKey, paths.encKey, paths.config]) assert.equal(statSync(file).mode & 0o777, 0o600, file);
  const node = openNode(home);
  node.store.setMeta('probe', '1');
  for (const file of [paths.store, `${paths.store}-wal`, `${paths.store}-shm`]) assert.equal(statSync(file).mode & 0o777, 0o600, file);
  closeNode(node);
  assert.deepEqual(readConfig(home), { v: 1, host: 'alpha', port: 7373 });
  assert.throws(() => initHome(home, 'alpha', 7373), /already holds a host/);
  assert.throws(() => initHome(join(tempDir(), 'h'), 'Bad_Name', 7373), /bad host name/);
});

test('key files that are too open or symlinks are refused, without printing key material', () => {
  const home = freshHome();
  const paths = homePaths(home);
  chmodSync(paths.hostKey, 0o644);
  assert.throws(() => loadKeys(home), /host\.key is too open \(mode 644\): run chmod 600/);
  chmodSync(paths.hostKey, 0o600);
  renameSync(paths.encKey, `${paths.encKey}.real`);
  symlinkSync(`${paths.encKey}.real`, paths.encKey);
  assert.throws(() => loadKeys(home), /enc\.key is a symlink/);
});

test('a store readable by others is refused', () => {
  const home = freshHome();
  closeNode(openNode(home));
  chmodSync(homePaths(home).store, 0o644);
  assert.throws(() => openNode(home), /host\.db is too open \(mode 644\)/);
});

test('a home readable by others is refused', () => {
  const home = freshHome();
  chmodSync(home, 0o755);
  assert.throws(() => readConfig(home), /too open \(mode 755\): run chmod 700/);
});

test('the CLI reports a bad home in one line, exit 1 (3 when there is no home)', async () => {
  const home = freshHome();
  chmodSync(homePaths(home).hostKey, 0o640);
  const r = await runCli(['whoami'], { MBX_HOME: home });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^agentmbx: .*too open.*\n$/);
  assert.equal(r.stderr.split('\n').length, 2, 'one line, no stack');
  const none = await runCli(['whoami'], { MBX_HOME: join(tempDir(), 'nothing') });
  assert.equal(none.code, 3, 'not found');
  assert.match(none.stderr, /no host at .*: run agentmbx init/);
});

test('the store is WAL, at the current schema, and refuses a newer one', () => {
  const home = freshHome();
  const node = openNode(home);
  assert.equal(node.store.schemaVersion(), SCHEMA_VERSION);
  assert.equal(node.store.quickCheck(), 'ok');
  closeNode(node);
  const raw = new DatabaseSync(homePaths(home).store);
  assert.equal((raw.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode, 'wal');
  raw.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
  raw.close();
  assert.throws(
    () => HostStore.open(homePaths(home).store),
    new RegExp(`schema version ${SCHEMA_VERSION + 1}, newer than this agentmbx \\(${SCHEMA_VERSION}\\): upgrade agentmbx`),
  );
});

test('migration 4 fills meta_json of received mail from its stored wire; older sent mail stays NULL', () => {
  const path = join(tempDir('mbx-migrate-'), 'store.db');
  const raw = new DatabaseSync(path);
  for (const m of MIGRATIONS.filter((m) => m.version <= 3)) m.up(raw);
  raw.exec('PRAGMA user_version = 3');
  const meta = { mentions: ['bob'], directives: [], tags: ['ops'], task_refs: [], origin: 'external', hop: 2 };
  const insert = raw.prepare(`INSERT INTO messages (id, direction, from_addr, sender_host, to_json, thread, reply_to, kind, subject, body, ts, wire, created_at)
    VALUES (?, ?, 'ann@alpha', 'alpha', '["bob@beta"]', 't', NULL, 'message', 's', 'b', '2026-12-02T12:00:00.000Z', ?, 0)`);
  insert.run('in-1', 'in', JSON.stringify({ v: 3, meta, body: 'sealed' }));
  insert.run('out-1', 'out', null);
  raw.close();
  const store = HostStore.open(path);
  assert.equal(store.schemaVersion(), SCHEMA_VERSION);
  assert.deepEqual(JSON.parse(store.mail.message('in-1')?.meta_json ?? 'null'), meta);
  assert.equal(store.mail.message('out-1')?.meta_json, null);
  store.close();
});
