// The host store's schema and transactions: a home written by agentmbx 0.6.0 opens unchanged under
// the numbered migrations, a newer schema is refused, a failed upgrade leaves nothing, and nested
// transactions are savepoints while assertTransaction() catches a write made outside of one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { applyMigrations, latestVersion, type Migration } from '../../src/common/sqlite-migrations.ts';
import { HostStore } from '../../src/host/store/host-store.ts';
import { NoTransactionError, StoreError } from '../../src/host/store/database.ts';
import { SCHEMA_VERSION } from '../../src/host/store/migrations/index.ts';
import { tempDir } from '../helpers/processes.ts';

const HOME_V5_SQL = readFileSync(new URL('./store-fixtures/home-schema-5.sql', import.meta.url), 'utf8');

/** A store file built from `sql` (a dump), closed again. */
function storeFrom(sql: string): string {
  const path = join(tempDir('mbx-store-'), 'store.db');
  const raw = new DatabaseSync(path);
  raw.exec(sql);
  raw.close();
  return path;
}

/** Every schema object and every row of the file, for before/after comparisons. */
function snapshot(path: string): { schema: string[]; rows: Record<string, unknown[]>; version: number } {
  const raw = new DatabaseSync(path, { readOnly: true });
  try {
    const objects = raw.prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'messages_fts_%' ORDER BY name").all();
    const rows: Record<string, unknown[]> = {};
    for (const o of objects) {
      if (o.type === 'table' && o.name !== 'messages_fts') rows[String(o.name)] = raw.prepare(`SELECT * FROM "${String(o.name)}" ORDER BY rowid`).all();
    }
    const version = (raw.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
    // whitespace aside: ALTER TABLE writes the same column list however it was indented
    return { schema: objects.map((o) => `${String(o.type)} ${String(o.name)}: ${String(o.sql).replace(/\s+/g, ' ')}`), rows, version };
  } finally {
    raw.close();
  }
}

test('a home store written by agentmbx 0.6.0 (schema 5) opens with its data unchanged, upgraded to the schema a new store gets', () => {
  const old = storeFrom(HOME_V5_SQL);
  const before = snapshot(old);
  assert.equal(before.version, 5);
  const store = HostStore.open(old);
  assert.equal(store.schemaVersion(), SCHEMA_VERSION);
  assert.equal(store.quickCheck(), 'ok');
  // its mail reads as before, the search index included
  assert.deepEqual(store.agentMail.search('bob', 'bob@beta', '"quarterly"', 10).map((m) => m.subject).sort(), ['quarterly figures', 're: quarterly figures']);
  assert.equal(store.agentMail.description('bob'), 'reads the reports');
  assert.equal(store.relay.receivedThrough('https://relay.example', 'epoch-1'), 42);
  store.close();
  const after = snapshot(old);
  // every row of schema 5 is still there as it was (a later schema adds tables and columns only)
  for (const [table, rows] of Object.entries(before.rows)) {
    const columns = (row: unknown): string[] => Object.keys(row as object);
    const kept = after.rows[table]?.map((r) => Object.fromEntries(Object.entries(r as object).filter(([k]) => rows.length === 0 || columns(rows[0]).includes(k))));
    assert.deepEqual(kept, rows.map((r) => ({ ...(r as object) })), `rows of ${table}`);
  }
  const fresh = join(tempDir('mbx-store-'), 'store.db');
  HostStore.open(fresh).close();
  assert.deepEqual(snapshot(fresh).schema, after.schema, 'the numbered migrations build the schema an upgraded store has');
});

test('a store of a newer schema is refused with one clear sentence, and left as it was', () => {
  const path = storeFrom(`${HOME_V5_SQL}\nPRAGMA user_version = ${SCHEMA_VERSION + 1};`);
  const before = snapshot(path);
  assert.throws(() => HostStore.open(path), (err: unknown) => {
    assert.ok(err instanceof StoreError);
    assert.equal(err.message, `the host store has schema version ${SCHEMA_VERSION + 1}, newer than this agentmbx (${SCHEMA_VERSION}): upgrade agentmbx (${path})`);
    return true;
  });
  assert.deepEqual(snapshot(path), before);
});

test('the shared runner applies every missing step in one transaction: a failing step leaves the database as it was', () => {
  const steps: Migration[] = [
    { version: 1, name: 'one table', up: (db) => db.exec('CREATE TABLE a (x INTEGER)') },
    { version: 2, name: 'half done', up: (db) => { db.exec('CREATE TABLE b (x INTEGER)'); throw new Error('boom'); } },
  ];
  const db = new DatabaseSync(':memory:');
  const run = {
    store: 'test store',
    readVersion: (tx: DatabaseSync) => (tx.prepare('PRAGMA user_version').get() as { user_version: number }).user_version,
    writeVersion: (tx: DatabaseSync, version: number) => tx.exec(`PRAGMA user_version = ${version}`),
    newError: (message: string, options: ErrorOptions) => new StoreError(message, options),
  };
  assert.throws(() => applyMigrations(db, steps, run), (err: unknown) => err instanceof StoreError
    && err.message === 'creating the test store failed at schema 2 (half done): boom; the test store was not changed');
  assert.equal(db.isTransaction, false);
  assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all(), []);
  assert.equal(applyMigrations(db, steps.slice(0, 1), run), 0, 'it reports the version it found');
  assert.equal(applyMigrations(db, steps.slice(0, 1), run), 1);
  assert.throws(() => latestVersion([steps[1] as Migration]), /numbered 1\.\.N in order; found 2 at position 1/);
  db.close();
});

test('a nested transaction is a savepoint: its failure takes back only its own writes', () => {
  const store = HostStore.open(join(tempDir('mbx-store-'), 'store.db'));
  try {
    store.transaction(() => {
      store.setMeta('outer', '1');
      assert.throws(() => store.transaction(() => {
        store.setMeta('inner', '1');
        throw new Error('inner fails');
      }), /inner fails/);
      assert.equal(store.db.inTransaction, true, 'the outer transaction is still open');
      store.transaction(() => store.setMeta('second', '1'));
    });
    assert.deepEqual(['outer', 'inner', 'second'].map((k) => store.getMeta(k)), ['1', undefined, '1']);
    // an outer failure takes back what its savepoints released
    assert.throws(() => store.transaction(() => {
      store.transaction(() => store.setMeta('released', '1'));
      throw new Error('outer fails');
    }), /outer fails/);
    assert.equal(store.getMeta('released'), undefined);
    assert.equal(store.db.inTransaction, false);
  } finally {
    store.close();
  }
});

test('assertTransaction() refuses a write that must join a transaction when none is open', () => {
  const store = HostStore.open(join(tempDir('mbx-store-'), 'store.db'));
  try {
    assert.throws(() => store.assertTransaction('queueing a receipt'), (err: unknown) => err instanceof NoTransactionError
      && err.message === 'queueing a receipt must run inside a store transaction');
    store.transaction(() => store.assertTransaction('queueing a receipt'));
    store.transaction(() => store.transaction(() => store.assertTransaction('queueing a receipt')));
  } finally {
    store.close();
  }
});
