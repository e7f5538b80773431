// Several relay processes on one PostgreSQL database: one at a time runs the heartbeat and the
// sweeps (the housekeeping lease), a standby takes over when the holder closes or its lock
// connection is cut, a standby starting never rotates the epoch, and a process whose store lock was
// lost refuses work (and says so) until it holds the lock again with the epoch it serves.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { rotateEpochOffline } from '../../../src/relay/ops/epoch.ts';
import { checkAtStartOrStandBy, checkHeartbeatAtStart, HEARTBEAT_STALE_MS, writeHeartbeat } from '../../../src/relay/ops/heartbeat.ts';
import { StoreOpenError } from '../../../src/relay/store/errors.ts';
import { openRelayStore } from '../../../src/relay/store/open-relay-store.ts';
import type { RelayStore } from '../../../src/relay/store/relay-store.ts';
import { handTicker, T0, TestClock } from '../../helpers/clock.ts';
import { freshPostgresDatabase, testPostgres } from '../../helpers/postgres-test-cluster.ts';
import { tempDir } from '../../helpers/processes.ts';
import { enrolledHost, envelopeItemTo, startTestRelay, type TestHost, type TestRelay, type TestRelayOptions } from '../../helpers/relay-fixture.ts';
import { waitUntil } from '../../helpers/wait.ts';
import { RELAY_KEY } from '../store/store-fixtures.ts';

const cluster = await testPostgres();

/** Heartbeat and sweep ticks of the relays here: real timers, so every wait below is for a condition. */
const TICK_MS = 50;
/** How long a condition may take to come true on a loaded machine. */
const DEADLINE_MS = 20_000;
/** The relays' clocks differ by this, so the stored heartbeat names the process that wrote it. */
const SECOND_CLOCK_OFFSET_MS = 1_000;

async function database(): Promise<string> {
  const fresh = await freshPostgresDatabase();
  if ('skip' in fresh) throw new Error(fresh.skip);
  return fresh.url;
}

async function psql<T>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Cuts the connection holding the housekeeping lease (an exclusive advisory lock) from outside, as a server restart or idle kill would. */
async function cutLeaseHolderConnection(url: string): Promise<void> {
  const cut = await psql<{ cut: boolean }>(
    url,
    `SELECT pg_terminate_backend(a.pid) AS cut FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
    WHERE a.datname = current_database() AND a.application_name = 'agentmbx-relay-lock'
      AND l.locktype = 'advisory' AND l.mode = 'ExclusiveLock' AND l.granted`,
  );
  assert.deepEqual(cut, [{ cut: true }], 'one lock connection held the lease and was cut');
}

/** A relay process (in this process) on the database; relays given one `dir` share its relay key. */
function relayOn(url: string, dir: string, clock: TestClock, extra: TestRelayOptions = {}): Promise<TestRelay> {
  return startTestRelay({ dir, clock, store: url, heartbeatIntervalMs: TICK_MS, config: { sweep_interval_ms: TICK_MS }, ...extra });
}

async function sweepsRun(relay: TestRelay): Promise<number> {
  const metric = await relay.service.metrics.registry.getSingleMetric('agentmbx_sweeps_total')?.get();
  return (metric?.values ?? []).reduce((sum, sample) => sum + sample.value, 0);
}

async function storedHeartbeat(store: RelayStore): Promise<number | null> {
  return (await store.read((reader) => reader.meta.get())).heartbeatAt;
}

async function health(relay: TestRelay): Promise<{ status: number; body: string }> {
  const answer = await fetch(`${relay.url}/healthz`);
  return { status: answer.status, body: await answer.text() };
}

/** The push's HTTP status and refusal code (x-mbx-refusal), if any. */
async function pushAnswer(from: TestHost, to: TestHost, nowMs: number): Promise<{ status: number; refusal: string | null }> {
  const answer = await from.api.push([envelopeItemTo(from, to, nowMs)]);
  return { status: answer.status, refusal: answer.refusalCode };
}

describe('one housekeeper among relay processes on one PostgreSQL database', { skip: cluster.available ? false : cluster.reason }, () => {
  test('one store holds the housekeeping lease at a time; another gets it once the holder closed', async () => {
    const url = await database();
    const first = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    const second = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    assert.equal(await first.housekeeping(), true);
    assert.equal(await second.housekeeping(), false);
    assert.equal(await first.housekeeping(), true, 'the holder keeps it');
    assert.equal(await second.housekeeping(), false, 'asked again, still a standby');
    await first.close();
    assert.equal(await second.housekeeping(), true);
    await second.close();
  });

  test('only the lease holder sweeps and writes the heartbeat; the other takes both over once the holder closes', async () => {
    const url = await database();
    const dir = tempDir('agentmbx-pg-lease-');
    const holder = await relayOn(url, dir, new TestClock(T0));
    const standby = await relayOn(url, dir, new TestClock(T0 + SECOND_CLOCK_OFFSET_MS));
    const store = standby.service.core.context.store;
    const holderSweepsBefore = await sweepsRun(holder);
    // the standby's timers tick as often as the holder's: three holder sweeps give it three chances
    await waitUntil('three more sweeps by the holder', DEADLINE_MS, async () => {
      const swept = (await sweepsRun(holder)) - holderSweepsBefore;
      return swept >= 3 ? null : `${swept} sweeps`;
    });
    assert.equal(await sweepsRun(standby), 0, 'the standby never swept');
    assert.equal(await storedHeartbeat(store), T0, "the heartbeat is the holder's");
    assert.equal(standby.service.epochRotatedAtStart, null);

    await holder.stop();
    await waitUntil('the standby sweeping and writing the heartbeat', DEADLINE_MS, async () => {
      const [swept, heartbeat] = [await sweepsRun(standby), await storedHeartbeat(store)];
      return swept > 0 && heartbeat === T0 + SECOND_CLOCK_OFFSET_MS ? null : `${swept} sweeps, heartbeat ${heartbeat}`;
    });
    assert.ok(
      standby.log.some((line) => /took over the heartbeat and sweeps/.test(line)),
      standby.log.join('\n'),
    );
  });

  test('a cut lock connection: the other process takes over; the cut one refuses work and says so until it holds the lock again, then serves as a standby', async () => {
    const url = await database();
    const dir = tempDir('agentmbx-pg-lease-');
    const holderChecks = handTicker();
    const holder = await relayOn(url, dir, new TestClock(T0), { lockCheckTicker: holderChecks.ticker });
    const standby = await relayOn(url, dir, new TestClock(T0 + SECOND_CLOCK_OFFSET_MS));
    const [a, b] = [await enrolledHost(holder, 'laptop'), await enrolledHost(holder, 'desk')];
    const store = standby.service.core.context.store;

    await cutLeaseHolderConnection(url);
    await waitUntil('the standby writing the heartbeat', DEADLINE_MS, async () => {
      const heartbeat = await storedHeartbeat(store);
      return heartbeat === T0 + SECOND_CLOCK_OFFSET_MS ? null : `heartbeat ${heartbeat}`;
    });
    await waitUntil('the cut process noticing', DEADLINE_MS, async () =>
      holder.log.some((line) => /lost its lock on the store/.test(line)) ? null : holder.log.join(' | '),
    );
    assert.equal(holder.log.filter((line) => /lost its lock on the store/.test(line)).length, 1, `one log line: ${holder.log.join(' | ')}`);
    assert.deepEqual(await pushAnswer(a, b, T0), { status: 503, refusal: 'STORE_BUSY' });
    const unhealthy = await health(holder);
    assert.equal(unhealthy.status, 503);
    assert.match(unhealthy.body, /lost its lock on the store at postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+/);
    assert.doesNotMatch(unhealthy.body, /at .*\.ts:\d+/, 'no stack trace');

    holderChecks.fire();
    await waitUntil('the lock held again', DEADLINE_MS, async () =>
      holder.log.some((line) => /store lock is held again/.test(line)) ? null : holder.log.join(' | '),
    );
    assert.deepEqual(await pushAnswer(a, b, T0), { status: 200, refusal: null });
    assert.equal((await health(holder)).status, 200);
    await assert.rejects(
      rotateEpochOffline({ storeDir: tempDir('agentmbx-pg-offline-'), store: url }),
      (error: Error) => error instanceof StoreOpenError && /a relay process is serving the store/.test(error.message),
    );
    assert.equal(await holder.service.core.context.store.housekeeping(), false, 'the standby keeps the lease');
  });

  test('an offline rotate-epoch that ran while the lock was lost: the process never serves its old epoch again', async () => {
    const url = await database();
    const checks = handTicker();
    const relay = await relayOn(url, tempDir('agentmbx-pg-lease-'), new TestClock(T0), { lockCheckTicker: checks.ticker });
    const [a, b] = [await enrolledHost(relay, 'laptop'), await enrolledHost(relay, 'desk')];

    await cutLeaseHolderConnection(url);
    await waitUntil('the process noticing', DEADLINE_MS, async () =>
      relay.log.some((line) => /lost its lock on the store/.test(line)) ? null : relay.log.join(' | '),
    );
    // the relay refuses everything meanwhile, so the offline operation runs beside no serving process
    const rotation = await rotateEpochOffline({ storeDir: tempDir('agentmbx-pg-offline-'), store: url });
    assert.equal(rotation.from, relay.service.epoch);

    checks.fire();
    await waitUntil('the process giving up', DEADLINE_MS, async () =>
      relay.log.some((line) => /epoch of the store .* changed .*: restart it/.test(line)) ? null : relay.log.join(' | '),
    );
    assert.deepEqual(await pushAnswer(a, b, T0), { status: 503, refusal: 'STORE_BUSY' });
    assert.match((await health(relay)).body, /changed while this process had lost its lock/);
    checks.fire();
    assert.deepEqual(await pushAnswer(a, b, T0), { status: 503, refusal: 'STORE_BUSY' }, 'still refused: it is not taken again');
    assert.equal(checks.stopped(), true, 'no more checks');
  });

  test('the lease free while another process serves (its holder died): a process starting with a stale heartbeat takes the heartbeat over and keeps the epoch', async () => {
    const url = await database();
    const serving = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    const starting = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    assert.equal(await checkHeartbeatAtStart(serving, T0), null);
    const { epoch } = await serving.read((reader) => reader.meta.get());
    // `serving` never asked for the lease (as after its holder died): `starting` gets it, and its clock calls the heartbeat stale
    const late = T0 + HEARTBEAT_STALE_MS + 1;
    assert.equal(await starting.servesAlone(), false, 'another process holds the store lock');
    assert.equal(await checkAtStartOrStandBy(starting, () => late), null, 'no rotation beside a serving process');
    const meta = await starting.read((reader) => reader.meta.get());
    assert.deepEqual([meta.epoch, meta.heartbeatAt], [epoch, late], 'the epoch kept, the heartbeat taken over');
    await serving.close();
    assert.equal(await starting.servesAlone(), true, 'alone once the other closed');
    await starting.close();
  });

  test('a serving process whose store epoch changed under it (another process rotated it) gives up at its next check', async () => {
    const url = await database();
    const checks = handTicker();
    const relay = await relayOn(url, tempDir('agentmbx-pg-lease-'), new TestClock(T0), { lockCheckTicker: checks.ticker });
    const [a, b] = [await enrolledHost(relay, 'laptop'), await enrolledHost(relay, 'desk')];
    await psql(url, `UPDATE meta SET value = 'rotated-elsewhere' WHERE key = 'epoch'`);
    checks.fire();
    await waitUntil('the process giving up', DEADLINE_MS, async () =>
      relay.log.some((line) => /changed while this process served it/.test(line)) ? null : relay.log.join(' | '),
    );
    assert.deepEqual(await pushAnswer(a, b, T0), { status: 503, refusal: 'STORE_BUSY' });
    assert.equal(checks.stopped(), true, 'no more checks');
  });

  test('a standby starting beside the holder never rotates the epoch: a heartbeat that looks stale to it makes it wait, then refuse', async () => {
    const url = await database();
    const holder = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    const standby = await openRelayStore({ location: url, relayPubkey: RELAY_KEY });
    assert.equal(await checkAtStartOrStandBy(holder, () => T0), null);
    const { epoch } = await standby.read((reader) => reader.meta.get());
    // the standby's clock runs past the stale limit (or the holder cannot write): no rotation beside a serving process
    const late = T0 + HEARTBEAT_STALE_MS + 1;
    await assert.rejects(
      checkAtStartOrStandBy(standby, () => late, { pollMs: 1, ms: 5 }),
      (error: Error) =>
        error instanceof StoreOpenError && /another relay process runs the heartbeat of this store, but the last heartbeat is 600 s old/.test(error.message),
    );
    const meta = await standby.read((reader) => reader.meta.get());
    assert.deepEqual([meta.epoch, meta.heartbeatAt], [epoch, T0], 'neither rotated nor written');

    // starting while the holder makes its own start-up rotation: it waits for it, and then serves the new epoch
    const waiting = checkAtStartOrStandBy(standby, () => late, { pollMs: 1, ms: DEADLINE_MS });
    const rotated = await checkHeartbeatAtStart(holder, late);
    assert.equal(await waiting, null);
    assert.equal((await standby.read((reader) => reader.meta.get())).epoch, rotated?.to);

    // the holder stops while a standby waits: the standby takes the lease and makes the check itself
    await writeHeartbeat(holder, T0);
    const takingOver = checkAtStartOrStandBy(standby, () => late, { pollMs: 1, ms: DEADLINE_MS });
    await holder.close();
    const own = await takingOver;
    assert.equal(own?.from, rotated?.to);
    assert.equal(await standby.housekeeping(), true);
    await standby.close();
  });
});
