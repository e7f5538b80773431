import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { fingerprint } from '../../../src/protocol/fingerprint.ts';
import { NotARelayStoreError, StoreKeyMismatchError, StoreMigrationError, StoreOpenError, StoreSchemaTooNewError } from '../../../src/relay/store/errors.ts';
import { MIGRATIONS, openSqliteRelayStore, readStoreMeta, RELAY_DB_FILE, SCHEMA_VERSION, type Migration } from '../../../src/relay/store/sqlite/index.ts';
import { tempDir } from '../../helpers/processes.ts';
import { freshStore, inspect, item, newKey, RELAY_KEY } from './store-fixtures.ts';

const TABLES = [
  'account_usage',
  'acked',
  'challenges',
  'cloud_keys',
  'counters',
  'dedup',
  'deny_list',
  'enc_ads',
  'enrolments',
  'items',
  'meta',
  'ops_log',
  'queue_usage',
  'rate_windows',
  'sender_lists',
  'sender_usage',
  'seqs',
];

const extraColumn: Migration = {
  version: SCHEMA_VERSION + 1,
  name: 'test: add a column',
  up(db) {
    db.exec('ALTER TABLE items ADD COLUMN note TEXT');
  },
};

function tableNames(dir: string): string[] {
  return inspect(dir, (db) =>
    db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
      .all()
      .map((r) => String(r.name)),
  );
}

test('a new store has the schema, WAL synced by the store, private files and its meta', async () => {
  const { store, dir } = await freshStore({ newEpoch: () => 'epoch-1', nowMs: () => 5 });
  assert.deepEqual(store.connectionSettings(), { journalMode: 'wal', synchronous: 'NORMAL', walSyncedBeforeSettle: true, busyTimeoutMs: 5_000 });
  assert.deepEqual(tableNames(dir), TABLES);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(join(dir, RELAY_DB_FILE)).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, `${RELAY_DB_FILE}-wal`)).mode & 0o777, 0o600);
  const meta = await store.read((tx) => tx.meta.get());
  assert.deepEqual(meta, { epoch: 'epoch-1', relayPubkey: RELAY_KEY, schemaVersion: SCHEMA_VERSION, heartbeatAt: null });
  assert.equal(
    inspect(dir, (db) => db.prepare('PRAGMA journal_mode').get()?.journal_mode),
    'wal',
  );
  await store.close();
});

test('the default epoch is 16 random bytes in base64url, different per store', async () => {
  const a = await freshStore();
  const b = await freshStore();
  const epochA = (await a.store.transaction((tx) => tx.meta.get())).epoch;
  const epochB = (await b.store.transaction((tx) => tx.meta.get())).epoch;
  assert.match(epochA, /^[A-Za-z0-9_-]{22}$/);
  assert.notEqual(epochA, epochB);
  await a.store.close();
  await b.store.close();
});

test('committed data, epoch and heartbeat survive close and reopen', async () => {
  const { store, dir } = await freshStore();
  const seq = await store.transaction(async (tx) => {
    await tx.meta.writeHeartbeat(1234);
    await tx.meta.setEpoch('epoch-2');
    return tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 100);
  });
  await store.close();
  const again = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY, newEpoch: () => 'never-used' });
  const [meta, page] = await again.transaction(async (tx) => [await tx.meta.get(), await tx.items.pull('T', 0, 10, 1_000)] as const);
  assert.equal(meta.epoch, 'epoch-2');
  assert.equal(meta.heartbeatAt, 1234);
  assert.deepEqual(
    page.items.map((i) => [i.seq, i.itemId]),
    [[seq, 'a']],
  );
  await again.close();
});

test('an older store is upgraded in one transaction and keeps its epoch', async () => {
  const { store, dir } = await freshStore({ newEpoch: () => 'kept' });
  await store.close();
  const upgraded = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY, migrations: [...MIGRATIONS, extraColumn], newEpoch: () => 'new' });
  const meta = await upgraded.transaction((tx) => tx.meta.get());
  assert.equal(meta.epoch, 'kept');
  assert.equal(meta.schemaVersion, SCHEMA_VERSION + 1);
  await upgraded.close();
  const columns = inspect(dir, (db) =>
    db
      .prepare('PRAGMA table_info(items)')
      .all()
      .map((r) => String(r.name)),
  );
  assert.ok(columns.includes('note'));
});

test('schema 4 keeps every dedup row of a schema-3 store: a retry is still a duplicate with its first seq, also for a tombstone', async () => {
  const { store, dir } = await freshStore({ migrations: MIGRATIONS.slice(0, 3) });
  const live = await store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: 'live' }), 5));
  const gone = await store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: 'acked' }), 5));
  await store.transaction((tx) => tx.items.ack('T', gone));
  await store.close();
  assert.equal(
    inspect(dir, (db) => db.prepare('SELECT count(*) AS n FROM dedup').get()?.n),
    2,
  );
  const upgraded = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY });
  assert.equal((await upgraded.transaction((tx) => tx.meta.get())).schemaVersion, SCHEMA_VERSION);
  const seen = await upgraded.transaction(async (tx) => [await tx.items.dedup('sender', 'live', 'T'), await tx.items.dedup('sender', 'acked', 'T')]);
  assert.deepEqual(
    seen.map((row) => row?.seq),
    [live, gone],
  );
  await upgraded.close();
});

test('schema 5 puts the dedup rows of a schema-4 store in acceptance order behind one key index', async () => {
  const { store, dir } = await freshStore({ migrations: MIGRATIONS.slice(0, 4) });
  await store.transaction(async (tx) => {
    for (const [itemId, acceptedAt] of [
      ['b', 300],
      ['a', 100],
      ['c', 200],
    ] as const)
      await tx.items.insert(item({ targetPubkey: 'T', itemId, acceptedAt }), 5);
  });
  await store.close();
  const upgraded = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY });
  await upgraded.close();
  assert.deepEqual(
    inspect(dir, (db) =>
      db
        .prepare('SELECT item_id FROM dedup ORDER BY rowid')
        .all()
        .map((row) => row['item_id']),
    ),
    ['a', 'c', 'b'],
  );
  const indexes = inspect(dir, (db) =>
    db
      .prepare('SELECT name, "unique" AS u FROM pragma_index_list(\'dedup\')')
      .all()
      .map((row) => `${row['name']}:${row['u']}`),
  );
  assert.deepEqual(indexes, ['dedup_key:1']);
});

test('a failing migration leaves the store unchanged, also the steps before it', async () => {
  const { store, dir } = await freshStore({ newEpoch: () => 'kept' });
  await store.close();
  const failing: Migration = {
    version: SCHEMA_VERSION + 2,
    name: 'test: half done',
    up(db) {
      db.exec('CREATE TABLE half_done (x INTEGER)');
      throw new Error('boom');
    },
  };
  await assert.rejects(
    openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY, migrations: [...MIGRATIONS, extraColumn, failing] }),
    (error: unknown) =>
      error instanceof StoreMigrationError &&
      error instanceof StoreOpenError &&
      new RegExp(`schema ${SCHEMA_VERSION + 2} \\(test: half done\\).*boom`).test(error.message),
  );
  assert.deepEqual(tableNames(dir), TABLES);
  const columns = inspect(dir, (db) =>
    db
      .prepare('PRAGMA table_info(items)')
      .all()
      .map((r) => String(r.name)),
  );
  assert.ok(!columns.includes('note'));
  assert.equal(readStoreMeta(dir).schemaVersion, SCHEMA_VERSION);
  const reopened = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY });
  assert.equal((await reopened.transaction((tx) => tx.meta.get())).epoch, 'kept');
  await reopened.close();
});

test('a store with a newer schema is refused', async () => {
  const { store, dir } = await freshStore();
  await store.close();
  const newer = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY, migrations: [...MIGRATIONS, extraColumn] });
  await newer.close();
  const message = `store schema ${SCHEMA_VERSION + 1} is newer than this agentmbx (${SCHEMA_VERSION}): upgrade agentmbx`;
  await assert.rejects(
    openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY }),
    (error: unknown) => error instanceof StoreSchemaTooNewError && error.message === message,
  );
  assert.throws(() => readStoreMeta(dir), StoreSchemaTooNewError);
});

test('a store of another relay key is refused, naming both fingerprints and no key', async () => {
  const { store, dir } = await freshStore();
  await store.close();
  const other = newKey();
  await assert.rejects(openSqliteRelayStore({ dir, relayPubkey: other }), (error: unknown) => {
    assert.ok(error instanceof StoreKeyMismatchError && error instanceof StoreOpenError);
    assert.ok(error.message.includes(fingerprint(RELAY_KEY)), error.message);
    assert.ok(error.message.includes(fingerprint(other)), error.message);
    assert.ok(!error.message.includes(RELAY_KEY) && !error.message.includes(other));
    return true;
  });
  assert.throws(() => readStoreMeta(dir, { relayPubkey: other }), StoreKeyMismatchError);
  assert.equal(readStoreMeta(dir, { relayPubkey: RELAY_KEY }).relayPubkey, RELAY_KEY);
});

test('files that are not relay stores are refused and left alone', async () => {
  const garbage = tempDir();
  writeFileSync(join(garbage, RELAY_DB_FILE), 'this is not a database, just some text that is long enough to look like one '.repeat(20));
  await assert.rejects(openSqliteRelayStore({ dir: garbage, relayPubkey: RELAY_KEY }), NotARelayStoreError);
  assert.throws(() => readStoreMeta(garbage), NotARelayStoreError);

  const foreign = tempDir();
  const db = new DatabaseSync(join(foreign, RELAY_DB_FILE));
  db.exec('CREATE TABLE notes (text TEXT)');
  db.close();
  await assert.rejects(
    openSqliteRelayStore({ dir: foreign, relayPubkey: RELAY_KEY }),
    (error: unknown) => error instanceof NotARelayStoreError && /not a relay store/.test(error.message),
  );
  assert.equal(
    inspect(foreign, (d) => d.prepare('PRAGMA journal_mode').get()?.journal_mode),
    'delete',
  );

  const noMeta = tempDir();
  const db2 = new DatabaseSync(join(noMeta, RELAY_DB_FILE));
  db2.exec('CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
  db2.close();
  await assert.rejects(openSqliteRelayStore({ dir: noMeta, relayPubkey: RELAY_KEY }), NotARelayStoreError);

  const empty = tempDir();
  assert.throws(
    () => readStoreMeta(empty),
    (error: unknown) => error instanceof NotARelayStoreError && /no relay store/.test(error.message),
  );
});

test('readStoreMeta reads a store while it is open, without changing it', async () => {
  const { store, dir } = await freshStore({ newEpoch: () => 'live' });
  await store.transaction((tx) => tx.meta.writeHeartbeat(77));
  assert.deepEqual(readStoreMeta(dir), { epoch: 'live', relayPubkey: RELAY_KEY, schemaVersion: SCHEMA_VERSION, heartbeatAt: 77 });
  await store.close();
});
