// A PostgreSQL store whose every pooled connection stays busy past the checkout timeout answers
// StoreOverloadedError (HTTP 503 STORE_BUSY, which a client retries), not a plain error (500
// INTERNAL): with 20,000 held pulls the relay answered a push 500 that way (docs/benchmark.md).
// And held pulls' reads never take the connections pushes and wake-ups need (read-slots.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreOverloadedError } from '../../../src/relay/store/errors.ts';
import { openPostgresRelayStore } from '../../../src/relay/store/postgres/open-store.ts';
import { freshPostgresDatabase } from '../../helpers/postgres-test-cluster.ts';
import { RELAY_KEY } from './store-fixtures.ts';

const database = await freshPostgresDatabase();
/** each test skips, saying why, where PostgreSQL is not installed */
const needsPostgres = { skip: 'skip' in database ? database.skip : false };

test('a read or a transaction that gets no pooled connection in time is StoreOverloadedError', needsPostgres, async () => {
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

test(
  "held pulls' reads leave the writer its connection and the other reads half the rest: a push, a wake-up and a request are served meanwhile",
  needsPostgres,
  async () => {
    if ('skip' in database) return;
    const store = await openPostgresRelayStore({ url: database.url, relayPubkey: RELAY_KEY, poolSize: 4, checkoutTimeoutMs: 5_000 });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let heldRunning = 0;
    // more held pulls' reads than the pool has connections, each kept open until the gate opens
    const held = Array.from({ length: 6 }, () =>
      store.read(async (reader) => {
        heldRunning += 1;
        await gate;
        return reader.meta.get();
      }, 'held'),
    );
    try {
      await store.transaction((tx) => tx.meta.writeHeartbeat(7));
      assert.equal((await store.read((reader) => reader.meta.get(), 'woken')).heartbeatAt, 7);
      assert.equal((await store.read((reader) => reader.meta.get())).heartbeatAt, 7);
      assert.equal(heldRunning, 1, 'held pulls read on half of the three read connections at most');
    } finally {
      release();
      await Promise.all(held);
      await store.close();
    }
    assert.equal(heldRunning, 6);
  },
);
