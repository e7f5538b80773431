// The RelayStore behaviour suite against the PostgreSQL backend, each test on a fresh database of a
// throwaway cluster (skipped, saying why, where PostgreSQL is not installed).
import { test } from 'node:test';
import { openRelayStore } from '../../../src/relay/store/open-relay-store.ts';
import { freshPostgresDatabase, testPostgres } from '../../helpers/postgres-test-cluster.ts';
import { describeRelayStore } from './behaviour/index.ts';
import { RELAY_KEY } from './store-fixtures.ts';

const cluster = await testPostgres();
if (cluster.available) {
  describeRelayStore('postgres', async () => {
    const database = await freshPostgresDatabase();
    if ('skip' in database) throw new Error(database.skip);
    const open = () => openRelayStore({ location: database.url, relayPubkey: RELAY_KEY });
    const under = {
      store: await open(),
      relayPubkey: RELAY_KEY,
      async reopen() {
        await under.store.close();
        under.store = await open();
        return under.store;
      },
      close: () => under.store.close(),
    };
    return under;
  });
} else {
  test('RelayStore behaviour: postgres', { skip: cluster.reason }, () => {});
}
