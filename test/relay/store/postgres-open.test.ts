// Opening a PostgreSQL store: a new database gets the schema; a database of another relay key, one
// written by a newer agentmbx, or one holding other tables is refused with the same errors as
// SQLite; a failed upgrade leaves the database as it was; the store lock keeps offline operations
// and serving relays apart; no message shows the password.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { NotARelayStoreError, StoreKeyMismatchError, StoreMigrationError, StoreOpenError, StoreSchemaTooNewError } from '../../../src/relay/store/errors.ts';
import { openRelayStore, readRelayStoreMeta } from '../../../src/relay/store/open-relay-store.ts';
import { POSTGRES_MIGRATIONS } from '../../../src/relay/store/postgres/migrations/index.ts';
import { openPostgresRelayStore } from '../../../src/relay/store/postgres/open-store.ts';
import { freshPostgresDatabase, testPostgres } from '../../helpers/postgres-test-cluster.ts';
import { newKey, RELAY_KEY } from './store-fixtures.ts';

const cluster = await testPostgres();

async function database(): Promise<string> {
  const fresh = await freshPostgresDatabase();
  if ('skip' in fresh) throw new Error(fresh.skip);
  return fresh.url;
}

async function psql(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('opening a PostgreSQL relay store', { skip: cluster.available ? false : cluster.reason }, () => {
  test('a new database gets the schema and meta; reopening keeps the epoch', async () => {
    const url = await database();
    const store = await openRelayStore({ location: url, relayPubkey: RELAY_KEY, newEpoch: () => 'first-epoch-0123456789' });
    await store.close();
    const meta = await readRelayStoreMeta(url, { relayPubkey: RELAY_KEY });
    assert.equal(meta.epoch, 'first-epoch-0123456789');
    assert.equal(meta.schemaVersion, POSTGRES_MIGRATIONS.length);
    const again = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    assert.equal((await again.read((reader) => reader.meta.get())).epoch, 'first-epoch-0123456789');
    await again.close();
  });

  test('another relay key, a newer schema, or a database with other tables is refused', async () => {
    const url = await database();
    await (await openRelayStore({ location: url, relayPubkey: RELAY_KEY })).close();
    await assert.rejects(openRelayStore({ location: url, relayPubkey: newKey() }), StoreKeyMismatchError);
    await psql(url, `UPDATE meta SET value = '999' WHERE key = 'schema_version'`);
    await assert.rejects(
      openRelayStore({ location: url, relayPubkey: RELAY_KEY }),
      (error: Error) => error instanceof StoreSchemaTooNewError && /store schema 999 is newer than this agentmbx/.test(error.message),
    );
    const other = await database();
    await psql(other, 'CREATE TABLE someone_elses (id int)');
    await assert.rejects(openRelayStore({ location: other, relayPubkey: RELAY_KEY }), NotARelayStoreError);
  });

  test('a failed upgrade leaves the database exactly as it was', async () => {
    const url = await database();
    await (await openRelayStore({ location: url, relayPubkey: RELAY_KEY })).close();
    const broken = [
      ...POSTGRES_MIGRATIONS,
      { version: POSTGRES_MIGRATIONS.length + 1, name: 'adds a table, then fails', sql: 'CREATE TABLE added (x int); SELECT no_such_function();' },
    ];
    await assert.rejects(
      openPostgresRelayStore({ url, relayPubkey: RELAY_KEY, migrations: broken }),
      (error: Error) => error instanceof StoreMigrationError && /the store was not changed/.test(error.message),
    );
    assert.deepEqual(await psql(url, `SELECT to_regclass('added') AS t`), [{ t: null }]);
    assert.equal((await readRelayStoreMeta(url)).schemaVersion, POSTGRES_MIGRATIONS.length);
  });

  test('an offline operation is refused while a relay serves the store, and a relay cannot start during one', async () => {
    const url = await database();
    const serving = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    await assert.rejects(openRelayStore({ location: url, relayPubkey: RELAY_KEY, exclusive: true }), /a relay process is serving the store/);
    await serving.close();
    const offline = await openRelayStore({ location: url, relayPubkey: RELAY_KEY, exclusive: true });
    await assert.rejects(openRelayStore({ location: url, relayPubkey: RELAY_KEY }), /an offline operation .* holds the store/);
    await offline.close();
  });

  test('an unreachable server is a StoreOpenError naming the database without its password', async () => {
    const start = await testPostgres();
    if (!start.available) return;
    const url = start.cluster
      .url('relay')
      .replace('postgres@', 'postgres:hunter2@')
      .replace(/:\d+\//, ':1/');
    await assert.rejects(
      openRelayStore({ location: url, relayPubkey: RELAY_KEY }),
      (error: Error) =>
        error instanceof StoreOpenError &&
        /cannot connect to the relay store at postgres:\/\/postgres@127\.0\.0\.1:1\/relay/.test(error.message) &&
        !error.message.includes('hunter2'),
    );
  });

  test('a URL that does not parse is a StoreOpenError that carries no password, in its message or anywhere in the error', async () => {
    await assert.rejects(
      openRelayStore({ location: 'postgres://u:hunter2@[::1/relay', relayPubkey: RELAY_KEY }),
      (error: Error) =>
        error instanceof StoreOpenError &&
        error.message === 'the relay store URL does not parse: check --store or MBX_RELAY_STORE' &&
        error.cause === undefined &&
        !JSON.stringify(error).includes('hunter2'),
    );
  });
});
