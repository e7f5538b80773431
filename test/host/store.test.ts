// The host store's schema and transactions: a home written by agentmbx 0.6.0 opens with its rows
// kept under the numbered migrations, a newer schema is refused, a failed upgrade leaves nothing, and nested
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

test('a home store written by agentmbx 0.6.0 (schema 5) opens with every row kept, its bodies now bytes, upgraded to the schema a new store gets', () => {
  const old = storeFrom(HOME_V5_SQL);
  const before = snapshot(old);
  assert.equal(before.version, 5);
  const store = HostStore.open(old);
  assert.equal(store.schemaVersion(), SCHEMA_VERSION);
  assert.equal(store.quickCheck(), 'ok');
  // its mail reads as before, the search index included
  assert.deepEqual(
    store.agentMail
      .search('bob', 'bob@beta', '"quarterly"', 10)
      .map((m) => m.subject)
      .sort(),
    ['quarterly figures', 're: quarterly figures'],
  );
  assert.equal(store.agentMail.description('bob'), 'reads the reports');
  assert.equal(store.relay.receivedThrough('https://relay.example', 'epoch-1'), 42);
  store.close();
  const after = snapshot(old);
  // schema 6 keeps each body as its UTF-8 bytes: the same bytes, a BLOB instead of TEXT
  const asText = (rows: unknown[] | undefined): unknown[] =>
    (rows ?? []).map((r) => {
      const row = r as Record<string, unknown>;
      return Object.assign(Object.create(null) as object, row, { body: row.body instanceof Uint8Array ? Buffer.from(row.body).toString('utf8') : row.body });
    });
  assert.ok((after.rows.messages ?? []).every((r) => (r as { body: unknown }).body instanceof Uint8Array));
  // schema 6 adds the agents' client (null until an MCP session names it) and two empty tables;
  // schema 9 how a remote recipient's agent was woken (null until its receipt says) and the wake tables;
  // schema 10 each message's needs_reply and refs (both false and [] in these envelopes)
  const addedColumns: Record<string, object> = { agents: { cli: null }, receipts: { wake: null }, messages: { needs_reply: 0, refs_json: '[]' } };
  for (const [table, rows] of Object.entries(before.rows)) {
    const added = addedColumns[table];
    const expected = added === undefined ? rows : rows.map((r) => Object.assign(Object.create(null) as object, r, added));
    assert.deepEqual(table === 'messages' ? asText(after.rows[table]) : after.rows[table], expected, `every row of ${table} is as it was`);
  }
  assert.deepEqual(after.rows['peer_agents'], []);
  assert.deepEqual(after.rows['peer_links'], []);
  const fresh = join(tempDir('mbx-store-'), 'store.db');
  HostStore.open(fresh).close();
  assert.deepEqual(after.schema, snapshot(fresh).schema, 'the upgraded store has the schema a new store gets');
  assert.equal(SCHEMA_VERSION, 10);
  // beyond 0.6.0's schema, what migrations 6 (directory, presence), 8 (dismissed quarantine),
  // 9 (wake) and 10 (needs_reply, refs) add; 7, bodies as bytes, changes no schema
  const added = after.schema.filter((o) => !before.schema.includes(o));
  assert.deepEqual(added.map((o) => o.replace(/:.*/, '')).sort(), [
    'index wake_guard_active',
    'index wake_guard_by_thread',
    'index wake_hook_sessions_age',
    'table agents',
    'table messages',
    'table peer_agents',
    'table peer_links',
    'table receipts',
    'table relay_quarantine',
    'table wake_cursors',
    'table wake_guard_trips',
    'table wake_hook_sessions',
    'table wake_outcomes',
  ]);
  assert.match(added.find((o) => o.startsWith('table relay_quarantine')) ?? '', / dismissed_at INTEGER,/);
  assert.match(added.find((o) => o.startsWith('table messages')) ?? '', / needs_reply INTEGER NOT NULL DEFAULT 0, refs_json TEXT NOT NULL DEFAULT '\[\]'\)$/);
});

test('schema 10 takes each message\'s needs_reply and refs from its received wire, or from a copy it sent; mail to local agents only keeps "a request needs a reply"', () => {
  const path = storeFrom(HOME_V5_SQL);
  const raw = new DatabaseSync(path);
  const copy = (from: string, id: string, kind: string, set = 'wire'): void => {
    raw
      .prepare(`INSERT INTO messages (id, direction, from_addr, sender_host, to_json, thread, reply_to, kind, subject, body, ts, wire, created_at, meta_json)
      SELECT ?1, direction, from_addr, sender_host, to_json, ?1, NULL, ?2, subject, body, ts, ${set}, created_at, meta_json FROM messages WHERE id = ?3`)
      .run(id, kind, from);
  };
  const received = '01M8VA0EG03SCBNH2J40G54J8A';
  const sent = '01M8VA0GEG4S9YAD2Y4S8THNXC';
  // received: a message asking for a reply, with refs
  copy(received, '01M8VA0EG03SCBNH2J40G54J9A', 'message', `json_set(wire, '$.needs_reply', json('true'), '$.refs', json('["https://x.example/a","T12"]'))`);
  // written here to local agents only: no wire, no outbox copy
  copy(sent, '01M8VA0GEG4S9YAD2Y4S8THN9A', 'request');
  // written here to a peer as a request that needs no reply, with a ref: its outbox copy says so
  copy(sent, '01M8VA0GEG4S9YAD2Y4S8THN9B', 'request');
  raw
    .prepare(`INSERT INTO outbox (kind, item_id, msg_id, peer_host, wire, state, attempts, next_at, created_at)
    SELECT kind, ?1, ?1, peer_host, json_set(wire, '$.id', ?1, '$.kind', 'request', '$.needs_reply', json('false'), '$.refs', json('["y"]')), state, attempts, next_at, created_at
    FROM outbox WHERE msg_id = ?2 AND kind = 'envelope'`)
    .run('01M8VA0GEG4S9YAD2Y4S8THN9B', sent);
  raw.close();
  const store = HostStore.open(path);
  try {
    const of = (id: string): [number, string] | undefined => {
      const m = store.mail.message(id);
      return m === undefined ? undefined : [m.needs_reply, m.refs_json];
    };
    assert.deepEqual(of(received), [0, '[]']);
    assert.deepEqual(of('01M8VA0EG03SCBNH2J40G54J9A'), [1, '["https://x.example/a","T12"]']);
    assert.deepEqual(of(sent), [0, '[]']);
    assert.deepEqual(of('01M8VA0GEG4S9YAD2Y4S8THN9A'), [1, '[]']);
    assert.deepEqual(of('01M8VA0GEG4S9YAD2Y4S8THN9B'), [0, '["y"]']);
  } finally {
    store.close();
  }
});

test('a body holding U+0000 that schema 5 stored as TEXT reads back whole after the upgrade, in search too', () => {
  const body = 'before\u0000after \u0001\u001f tail \u{1F600}';
  const path = storeFrom(HOME_V5_SQL);
  const raw = new DatabaseSync(path);
  // a new row (the insert trigger indexes it), as 0.6.0 wrote one: the whole body went into the TEXT column
  raw
    .prepare(`INSERT INTO messages (id, direction, from_addr, sender_host, to_json, thread, reply_to, kind, subject, body, ts, wire, created_at, meta_json)
    SELECT ?1, direction, from_addr, sender_host, to_json, ?1, NULL, kind, 'zeroes', ?2, ts, wire, created_at, meta_json FROM messages WHERE subject = 'quarterly figures'`)
    .run('01M8VA0EG03SCBNH2J40G54J8Z', body);
  raw.prepare("INSERT INTO deliveries (msg_id, agent, state, receipt_seq, updated_at) VALUES (?, 'bob', 'delivered', 1, 0)").run('01M8VA0EG03SCBNH2J40G54J8Z');
  raw.close();
  const store = HostStore.open(path);
  try {
    const found = store.agentMail.search('bob', 'bob@beta', '"tail"', 10);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.body, body);
    assert.equal(store.mail.message(found[0]?.id ?? '')?.body, body);
  } finally {
    store.close();
  }
});

test('a store of a newer schema is refused with one clear sentence, and left as it was', () => {
  const path = storeFrom(`${HOME_V5_SQL}\nPRAGMA user_version = ${SCHEMA_VERSION + 1};`);
  const before = snapshot(path);
  assert.throws(
    () => HostStore.open(path),
    (err: unknown) => {
      assert.ok(err instanceof StoreError);
      assert.equal(
        err.message,
        `the host store has schema version ${SCHEMA_VERSION + 1}, newer than this agentmbx (${SCHEMA_VERSION}): upgrade agentmbx (${path})`,
      );
      return true;
    },
  );
  assert.deepEqual(snapshot(path), before);
});

test('the shared runner applies every missing step in one transaction: a failing step leaves the database as it was', () => {
  const steps: Migration[] = [
    { version: 1, name: 'one table', up: (db) => db.exec('CREATE TABLE a (x INTEGER)') },
    {
      version: 2,
      name: 'half done',
      up: (db) => {
        db.exec('CREATE TABLE b (x INTEGER)');
        throw new Error('boom');
      },
    },
  ];
  const db = new DatabaseSync(':memory:');
  const run = {
    store: 'test store',
    readVersion: (tx: DatabaseSync) => (tx.prepare('PRAGMA user_version').get() as { user_version: number }).user_version,
    writeVersion: (tx: DatabaseSync, version: number) => tx.exec(`PRAGMA user_version = ${version}`),
    newError: (message: string, options: ErrorOptions) => new StoreError(message, options),
  };
  assert.throws(
    () => applyMigrations(db, steps, run),
    (err: unknown) =>
      err instanceof StoreError && err.message === 'creating the test store failed at schema 2 (half done): boom; the test store was not changed',
  );
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
      assert.throws(
        () =>
          store.transaction(() => {
            store.setMeta('inner', '1');
            throw new Error('inner fails');
          }),
        /inner fails/,
      );
      assert.equal(store.db.inTransaction, true, 'the outer transaction is still open');
      store.transaction(() => store.setMeta('second', '1'));
    });
    assert.deepEqual(
      ['outer', 'inner', 'second'].map((k) => store.getMeta(k)),
      ['1', undefined, '1'],
    );
    // an outer failure takes back what its savepoints released
    assert.throws(
      () =>
        store.transaction(() => {
          store.transaction(() => store.setMeta('released', '1'));
          throw new Error('outer fails');
        }),
      /outer fails/,
    );
    assert.equal(store.getMeta('released'), undefined);
    assert.equal(store.db.inTransaction, false);
  } finally {
    store.close();
  }
});

test('assertTransaction() refuses a write that must join a transaction when none is open', () => {
  const store = HostStore.open(join(tempDir('mbx-store-'), 'store.db'));
  try {
    assert.throws(
      () => store.assertTransaction('queueing a receipt'),
      (err: unknown) => err instanceof NoTransactionError && err.message === 'queueing a receipt must run inside a store transaction',
    );
    store.transaction(() => store.assertTransaction('queueing a receipt'));
    store.transaction(() => store.transaction(() => store.assertTransaction('queueing a receipt')));
  } finally {
    store.close();
  }
});
