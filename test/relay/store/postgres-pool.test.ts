// A PostgreSQL store whose every pooled connection stays busy past the checkout timeout answers
// StoreOverloadedError (HTTP 503 STORE_BUSY, which a client retries), not a plain error (500
// INTERNAL): with 20,000 held pulls the relay answered a push 500 that way (docs/benchmark.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreOverloadedError } from '../../../src/relay/store/errors.ts';
import { openPostgresRelayStore } from '../../../src/relay/store/postgres/open-store.ts';
import { freshPostgresDatabase } from '../../helpers/postgres-test-cluster.ts';
import { RELAY_KEY } from './store-fixtures.ts';

const database = await freshPostgresDatabase();

test('a read or a transaction that gets no pooled connection in time is StoreOverloadedError', {
  skip: 'skip' in database ? database.skip : false,
}, async () => {
  if ('skip' in database) return;
  const store = await openPostgresRelayStore({ url: database.url, relayPubkey: RELAY_KEY, poolSize: 1, checkoutTimeoutMs: 200 });
  let release: () => void = () => {};
  const holding = store.read(() => new Promise<void>((resolve) => (release = resolve)));
  try {
    await assert.rejects(
      store.read((reader) => reader.meta.get()),
      StoreOverloadedError,
    );
    await assert.rejects(
      store.transaction((tx) => tx.meta.writeHeartbeat(1)),
      StoreOverloadedError,
    );
    release();
    await holding;
    assert.equal(typeof (await store.read((reader) => reader.meta.get())).epoch, 'string', 'served again once a connection is free');
  } finally {
    // the held read ends first: the store closes only once its reads are done
    release();
    await holding;
    await store.close();
  }
});
