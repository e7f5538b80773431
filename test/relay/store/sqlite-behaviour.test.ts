// The RelayStore behaviour suite against the SQLite backend, each test on a store in a fresh directory.
import { join } from 'node:path';
import { openRelayStore } from '../../../src/relay/store/open-relay-store.ts';
import { tempDir } from '../../helpers/processes.ts';
import { describeRelayStore } from './behaviour/index.ts';
import { RELAY_KEY } from './store-fixtures.ts';

describeRelayStore('sqlite', async () => {
  const location = join(tempDir('agentmbx-store-'), 'store'); // removed after the test
  const open = () => openRelayStore({ location, relayPubkey: RELAY_KEY });
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
