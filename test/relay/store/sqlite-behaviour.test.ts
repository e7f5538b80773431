// The RelayStore behaviour suite against the SQLite backend, each test on a store in a fresh directory.
import { join } from 'node:path';
import { openRelayStore } from '../../../src/relay/store/open-relay-store.ts';
import { tempDir } from '../../helpers/processes.ts';
import { describeRelayStore, storeUnderTest } from './behaviour/index.ts';
import { RELAY_KEY } from './store-fixtures.ts';

describeRelayStore('sqlite', async () => {
  const location = join(tempDir('agentmbx-store-'), 'store'); // removed after the test
  return storeUnderTest(() => openRelayStore({ location, relayPubkey: RELAY_KEY }), RELAY_KEY);
});
