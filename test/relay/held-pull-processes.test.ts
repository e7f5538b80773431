// Held pulls woken across processes (docs/relay-operator.md "Held pulls"): an item committed by one
// worker of a `relay serve --workers 2` group wakes pulls held by the other worker (through the
// primary, over IPC), and an item committed by one relay on a PostgreSQL database wakes a pull held
// by another relay on it (LISTEN/NOTIFY). Real processes; the pulls' wait (50 s) is far above the
// deadline, so only a wake-up can answer them in time.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { enrolledHost, envelopeItem, sealedEnvelope, testHost, type TestHost } from '../helpers/relay-fixture.ts';
import { freshPostgresDatabase, testPostgres } from '../helpers/postgres-test-cluster.ts';
import { spawnPostgresRelays } from '../helpers/postgres-relays.ts';
import { tempDir } from '../helpers/processes.ts';
import { spawnRelay, type RelayProcess } from '../helpers/relay-process.ts';
import { waitUntil, withDeadline } from '../helpers/wait.ts';

type Page = { items: Array<{ item_id: string }> };

const WAIT_S = 50;
const WOKEN_WITHIN_MS = 10_000;

/** Held pulls the relay (or group) at `url` reports in /metrics. */
async function heldPulls(url: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  return Number(/^agentmbx_held_pulls (\d+)$/m.exec(text)?.[1] ?? 'NaN');
}

function via(relay: RelayProcess, host: TestHost): TestHost {
  return { ...testHost(relay, host.name, host.key), enc: host.enc };
}

test('a --workers 2 group: one item for six hosts, committed by one worker, answers every held pull, those held by the other worker too', {
  timeout: 60_000,
}, async () => {
  const relay = await spawnRelay(tempDir('agentmbx-held-group-'), { workers: 2 });
  const sender = await enrolledHost(relay, 'laptop');
  const targets = await Promise.all(Array.from({ length: 6 }, (_, i) => enrolledHost(relay, `desk${i}`)));
  // six pulls at once take six connections, which the primary hands to the workers in turn
  const pulls = targets.map((t) => t.api.pull(0, undefined, undefined, WAIT_S));
  await waitUntil('six held pulls in the group', 10_000, async () => {
    const held = await heldPulls(relay.url);
    return held === 6 ? null : `${held} held`;
  });
  const env = sealedEnvelope(sender, targets[0] as TestHost, Date.now());
  const pushed = await sender.api.push([
    envelopeItem(
      env.id,
      targets.map((host) => ({ host, wire: env.wire })),
    ),
  ]);
  assert.equal((pushed.body['results'] as Array<{ status: string }>)[0]?.status, 'accepted');
  const pages = await withDeadline('every held pull to answer', WOKEN_WITHIN_MS, Promise.all(pulls));
  assert.deepEqual(
    pages.map((p) => (p.body as Page).items.map((i) => i.item_id)),
    targets.map(() => [env.id]),
  );
});

const cluster = await testPostgres();

describe('two relays on one PostgreSQL database', { skip: cluster.available ? false : cluster.reason }, () => {
  test('a pull held by one relay is answered when the item commits through the other', { timeout: 60_000 }, async () => {
    const database = await freshPostgresDatabase();
    if ('skip' in database) throw new Error(database.skip);
    const {
      relays: [first, second],
    } = await spawnPostgresRelays(database.url, 2);
    const one = first as RelayProcess;
    const two = second as RelayProcess;
    const sender = await enrolledHost(two, 'laptop');
    const target = await enrolledHost(one, 'desk');
    const held = target.api.pull(0, undefined, undefined, WAIT_S);
    await waitUntil('the pull to be held by the first relay', 10_000, async () => {
      const count = await heldPulls(one.url);
      return count === 1 ? null : `${count} held`;
    });
    const env = sealedEnvelope(sender, target, Date.now());
    const pushed = await via(two, sender).api.push([envelopeItem(env.id, [{ host: target, wire: env.wire }])]);
    assert.equal((pushed.body['results'] as Array<{ status: string }>)[0]?.status, 'accepted');
    const page = (await withDeadline('the held pull to answer', WOKEN_WITHIN_MS, held)).body as Page;
    assert.deepEqual(
      page.items.map((i) => i.item_id),
      [env.id],
    );
  });

  test('an item committed while a relay has lost its notification connection still answers the pull it holds, once the connection is back', {
    timeout: 60_000,
  }, async () => {
    const database = await freshPostgresDatabase();
    if ('skip' in database) throw new Error(database.skip);
    const {
      relays: [first, second],
    } = await spawnPostgresRelays(database.url, 2);
    const one = first as RelayProcess;
    const two = second as RelayProcess;
    const sender = await enrolledHost(two, 'laptop');
    const target = await enrolledHost(one, 'desk');
    const held = target.api.pull(0, undefined, undefined, WAIT_S);
    await waitUntil('the pull to be held by the first relay', 10_000, async () => ((await heldPulls(one.url)) === 1 ? null : 'not held'));
    // the server ends the first relay's listening connection: the NOTIFY of the push below reaches nobody there
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      // the first relay's listener is the older one (the relays start one after the other)
      const ended = await admin.query(`SELECT pg_terminate_backend(pid) FROM (SELECT pid FROM pg_stat_activity
        WHERE application_name = 'agentmbx-relay-wakes' AND datname = current_database() ORDER BY backend_start LIMIT 1) AS oldest`);
      assert.equal(ended.rowCount, 1);
    } finally {
      await admin.end();
    }
    const env = sealedEnvelope(sender, target, Date.now());
    await via(two, sender).api.push([envelopeItem(env.id, [{ host: target, wire: env.wire }])]);
    const page = (await withDeadline('the held pull to answer after the reconnect', WOKEN_WITHIN_MS, held)).body as Page;
    assert.deepEqual(
      page.items.map((i) => i.item_id),
      [env.id],
    );
    assert.match(one.child.stderr(), /held-pull notification connection .* is back/);
  });
});
