// The RelayStore behaviour suite against the PostgreSQL backend, each test on a fresh database of a
// throwaway cluster (skipped, saying why, where PostgreSQL is not installed).
import { test } from 'node:test';
import { openRelayStore } from '../../../src/relay/store/open-relay-store.ts';
import { freshPostgresDatabase, testPostgres } from '../../helpers/postgres-test-cluster.ts';
import { describeRelayStore, storeUnderTest } from './behaviour/index.ts';
import { RELAY_KEY } from './store-fixtures.ts';

const cluster = await testPostgres();
if (cluster.available) {
  describeRelayStore('postgres', async () => {
    const database = await freshPostgresDatabase();
    if ('skip' in database) throw new Error(database.skip);
    return storeUnderTest(() => openRelayStore({ location: database.url, relayPubkey: RELAY_KEY }), RELAY_KEY);
  });
} else {
  test('RelayStore behaviour: postgres', { skip: cluster.reason }, () => {});
}
