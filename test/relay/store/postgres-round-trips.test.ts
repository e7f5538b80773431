// The PostgreSQL push and pull paths' round trips (docs/benchmark.md "PostgreSQL push path"): a push
// or a pull through the core costs at most a fixed number of socket writes to the server (each one
// round trip its caller waits for), so that a change which adds one fails here, not only in the
// bench; a lookup (RelayStore.lookup) is its one statement alone. The reads a
// push sends ahead (read-ahead.ts) never hide a write of their own transaction, and a batch
// (sql.ts) whose connection dies fails its transaction without stalling the store.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { signRelayHop } from '../../../src/protocol/relay-hop.ts';
import { openPostgresRelayStore } from '../../../src/relay/store/postgres/open-store.ts';
import type { Enrolment } from '../../../src/relay/store/relay-store.ts';
import type { PostgresRelayStore } from '../../../src/relay/store/postgres/postgres-relay-store.ts';
import { SecondStatementError, type Traffic } from '../../../src/relay/store/postgres/sql.ts';
import { freshPostgresDatabase } from '../../helpers/postgres-test-cluster.ts';
import { waitUntil } from '../../helpers/wait.ts';
import { enrolledAtCore, startTestCore } from '../../helpers/relay-core-fixture.ts';
import { envelopeItem, envelopeItemTo, pushOne, sealedEnvelope } from '../../helpers/relay-fixture.ts';
import { enrolment, item, senderList } from './behaviour/harness.ts';
import { newKey, RELAY_KEY } from './store-fixtures.ts';

/**
 * Writes of a single-item push with its request's push-rate count, all in one commit group: BEGIN
 * (alone), the savepoint with the rate count, the target's lock with its enrolment and sender list,
 * the target's lock with the dedup row and both usage counters, the insert, COMMIT. Before the
 * pipelining it was 17.
 */
const SINGLE_PUSH_WRITES = 6;
/** A duplicate stops after the dedup row: no insert. */
const DUPLICATE_PUSH_WRITES = 5;
/** Each further target adds its enrolment, its dedup row and its insert. */
const WRITES_PER_FURTHER_TARGET = 3;

const database = await freshPostgresDatabase();

/** What `store` sent to the server while `run` ran. */
async function trafficDuring(store: PostgresRelayStore, run: () => Promise<unknown>): Promise<Traffic> {
  const start = store.traffic();
  await run();
  const end = store.traffic();
  return { statements: end.statements - start.statements, writes: end.writes - start.writes };
}

describe('PostgreSQL push and pull paths', { skip: 'skip' in database ? database.skip : false }, () => {
  /** A core on a fresh database (closed after the test) with three hosts enrolled, and what a push sends. */
  async function startCore() {
    const fresh = await freshPostgresDatabase();
    const url = 'url' in fresh ? fresh.url : '';
    let store: PostgresRelayStore | null = null;
    const relay = await startTestCore({
      openStore: async (options) => {
        store = await openPostgresRelayStore({ url, ...options });
        return store;
      },
    });
    const opened = store as unknown as PostgresRelayStore;
    const [alice, bob, carol] = [await enrolledAtCore(relay, 'alice'), await enrolledAtCore(relay, 'bob'), await enrolledAtCore(relay, 'carol')];
    /** the status of pushing `pushed` from alice, and what that sent to the server */
    const push = async (pushed: unknown): Promise<{ status: string; traffic: Traffic }> => {
      let status = '';
      const traffic = await trafficDuring(opened, async () => {
        status = (await pushOne(alice, pushed)).status;
      });
      return { status, traffic };
    };
    const trafficOf = (run: () => Promise<unknown>): Promise<Traffic> => trafficDuring(opened, run);
    return { relay, alice, bob, carol, push, trafficOf };
  }

  test(`a single-item push takes at most ${SINGLE_PUSH_WRITES} round trips, a duplicate ${DUPLICATE_PUSH_WRITES}`, async () => {
    const { relay, alice, bob, push } = await startCore();
    const { item: pushed } = envelopeItemTo(alice, bob, relay.clock.nowMs());
    const first = await push(pushed);
    assert.equal(first.status, 'accepted');
    assert.ok(first.traffic.writes <= SINGLE_PUSH_WRITES, `a push took ${first.traffic.writes} writes (${first.traffic.statements} statements)`);
    const again = await push(pushed);
    assert.equal(again.status, 'duplicate');
    assert.ok(again.traffic.writes <= DUPLICATE_PUSH_WRITES, `a duplicate took ${again.traffic.writes} writes (${again.traffic.statements} statements)`);
  });

  test('an item for two targets adds a fixed number of round trips per target', async () => {
    const { relay, alice, bob, carol, push } = await startCore();
    const now = relay.clock.nowMs();
    const toBob = sealedEnvelope(alice, bob, now);
    const toCarol = sealedEnvelope(alice, carol, now, 'hello', 'body', toBob.id);
    const pushed = await push(
      envelopeItem(toBob.id, [
        { host: bob, wire: toBob.wire },
        { host: carol, wire: toCarol.wire },
      ]),
    );
    assert.equal(pushed.status, 'accepted');
    const most = SINGLE_PUSH_WRITES + WRITES_PER_FURTHER_TARGET;
    assert.ok(pushed.traffic.writes <= most, `a two-target push took ${pushed.traffic.writes} writes, more than ${most}`);
  });

  test("a request's caller lookup is one round trip: its one statement, without BEGIN and COMMIT", async () => {
    const { relay, bob, trafficOf } = await startCore();
    const request = { method: 'GET', path: '/v2/relay/items?after=0&wait=55', rawBody: '' };
    const hop = signRelayHop(request, bob.name, bob.key, relay.clock.nowMs());
    let caller: Enrolment | null = null;
    const looked = await trafficOf(async () => {
      caller = await relay.core.caller({ host: hop['x-mbx-host'], key: hop['x-mbx-key'], ts: hop['x-mbx-ts'], sig: hop['x-mbx-sig'] }, request, 'held');
    });
    assert.equal((caller as Enrolment | null)?.hostPubkey, bob.key.publicKey);
    assert.deepEqual(looked, { statements: 1, writes: 1 }, 'in a read of its own it was 3 statements in 2 round trips');
  });
});

describe('PostgreSQL reads: lookups, and reads sent ahead', { skip: 'skip' in database ? database.skip : false }, () => {
  let store: PostgresRelayStore;
  before(async () => {
    const fresh = await freshPostgresDatabase();
    store = await openPostgresRelayStore({ url: 'url' in fresh ? fresh.url : '', relayPubkey: RELAY_KEY });
  });
  after(() => store.close());

  test('a lookup is its one statement alone (no BEGIN, no COMMIT); a second statement fails it, and the store serves on', async () => {
    const host = newKey();
    await store.transaction((tx) => tx.enrolments.put(enrolment(host)));
    let found: Enrolment | null = null;
    const looked = await trafficDuring(store, async () => {
      found = await store.lookup((reader) => reader.enrolments.get(host));
    });
    assert.equal((found as Enrolment | null)?.hostPubkey, host);
    assert.deepEqual(looked, { statements: 1, writes: 1 });
    await assert.rejects(
      store.lookup(async (reader) => [await reader.enrolments.get(host), await reader.items.headSeq(host)]),
      SecondStatementError,
    );
    assert.equal((await store.lookup((reader) => reader.enrolments.get(host)))?.hostPubkey, host);
    assert.equal(await store.read((reader) => reader.items.headSeq(host)), 0);
  });

  test('a sender list read ahead with an enrolment is not served after the transaction wrote the list', async () => {
    const target = newKey();
    await store.transaction((tx) => tx.enrolments.put(enrolment(target)));
    const seen = await store.transaction(async (tx) => {
      await tx.enrolments.get(target);
      await tx.hostRecords.putSenderList(senderList(target, ['only-me']));
      return tx.hostRecords.senderList(target);
    });
    assert.deepEqual(seen?.senders, ['only-me']);
  });

  test('usage read ahead with a dedup row is not served after the transaction inserted an item', async () => {
    const target = newKey();
    const usage = await store.transaction(async (tx) => {
      await tx.items.dedup('sender', 'one', target);
      await tx.items.insert(item({ targetPubkey: target, itemId: 'one' }), 1_000);
      return { queue: await tx.usage.queue(target), share: await tx.usage.sender('sender', target) };
    });
    assert.equal(usage.queue.items, 1);
    assert.equal(usage.share.items, 1);
  });
});

describe('PostgreSQL batches when the connection is lost', { skip: 'skip' in database ? database.skip : false }, () => {
  let store: PostgresRelayStore;
  let observer: pg.Client;
  before(async () => {
    const fresh = await freshPostgresDatabase();
    const url = 'url' in fresh ? fresh.url : '';
    store = await openPostgresRelayStore({ url, relayPubkey: RELAY_KEY });
    observer = new pg.Client({ connectionString: url });
    await observer.connect();
  });
  after(async () => {
    await observer.end();
    await store.close();
  });

  test('a batch whose connection dies fails its transaction, and the store carries on', async () => {
    const target = newKey();
    await observer.query('BEGIN');
    await observer.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`target:${target}`]);
    const waiting = store.transaction((tx) => tx.items.dedup('sender', 'one', target));
    waiting.catch(() => {});
    let backend = 0;
    await waitUntil('the store to wait on the target lock', 10_000, async () => {
      const { rows } = await observer.query(`SELECT pid FROM pg_stat_activity
          WHERE application_name = 'agentmbx-relay' AND wait_event_type = 'Lock'`);
      backend = (rows[0] as { pid?: number } | undefined)?.pid ?? 0;
      return backend === 0 ? 'not waiting yet' : null;
    });
    await observer.query('SELECT pg_terminate_backend($1)', [backend]);
    await assert.rejects(waiting);
    await observer.query('ROLLBACK');
    assert.equal(await store.transaction((tx) => tx.items.dedup('sender', 'one', target)), null);
  });
});
