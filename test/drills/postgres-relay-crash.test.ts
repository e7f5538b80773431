// A relay process on PostgreSQL killed with SIGKILL mid-push (design §5 crash windows), while a
// second process of the group keeps serving: the sender's retry through the other process settles
// the item exactly once, and the killed process, restarted, serves the same queue and epoch.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { enrolledHost, envelopeItem, testHost, sealedEnvelope, type TestHost } from '../helpers/relay-fixture.ts';
import { freshPostgresDatabase, testPostgres } from '../helpers/postgres-test-cluster.ts';
import { spawnPostgresRelays } from '../helpers/postgres-relays.ts';
import type { RelayProcess } from '../helpers/relay-process.ts';

type PushResult = { status: string; targets: Array<{ seq: number }> };
type Page = { items: Array<{ seq: number; item_id: string }>; epoch: string };

/** Messages in flight when the armed relay dies at its Nth commit. */
const IN_FLIGHT = 30;
const DIES_AT_COMMIT = 12;

function via(relay: RelayProcess, host: TestHost): TestHost {
  return { ...testHost(relay, host.name, host.key), enc: host.enc };
}

const cluster = await testPostgres();

async function group(failpoint: string) {
  const database = await freshPostgresDatabase();
  if ('skip' in database) throw new Error(database.skip);
  const relays = await spawnPostgresRelays(database.url, 1);
  const survivor = relays.relays[0] as RelayProcess;
  const armed = await relays.spawn(failpoint);
  const a = await enrolledHost(survivor, 'laptop');
  const b = await enrolledHost(survivor, 'desk');
  return { relays, survivor, armed, a, b };
}

describe('a PostgreSQL relay process killed mid-push', { skip: cluster.available ? false : cluster.reason }, () => {
  for (const [failpoint, window] of [
    ['relay.push.before-commit', 'inside the push transaction'],
    ['relay.push.after-commit', 'after the commit, before the answer'],
  ] as const) {
    test(`killed ${window}: the retry through the other process stores it exactly once; the restarted process serves on`, async () => {
      const { relays, survivor, armed, a, b } = await group(failpoint);
      const env = sealedEnvelope(a, b, Date.now());
      const item = envelopeItem(env.id, [{ host: b, wire: env.wire }]);
      await assert.rejects(via(armed, a).api.push([item]), 'the answer never comes');
      assert.equal(await armed.child.exited, 'SIGKILL');
      const retry = ((await a.api.push([item])).body['results'] as PushResult[])[0];
      assert.equal(retry?.status, failpoint === 'relay.push.after-commit' ? 'duplicate' : 'accepted');
      const restarted = await relays.spawn();
      assert.equal(restarted.epoch, survivor.epoch, 'a restart keeps the epoch');
      const page = (await via(restarted, b).api.pull(0)).body as Page;
      assert.deepEqual(
        page.items.map((i) => i.item_id),
        [env.id],
        'stored exactly once',
      );
      assert.equal(page.items[0]?.seq, retry?.targets[0]?.seq);
    });
  }

  test('killed with many pushes in flight: every message the sender retries until accepted is queued exactly once', async () => {
    const { relays, survivor, armed, a, b } = await group(`relay.push.after-commit@${DIES_AT_COMMIT}`);
    const envelopes = Array.from({ length: IN_FLIGHT }, (_, i) => sealedEnvelope(a, b, Date.now() + i));
    const aArmed = via(armed, a);
    // each push goes to the armed process first; one that gets no valid answer is retried through the survivor
    const outcomes = await Promise.all(
      envelopes.map(async (env) => {
        const item = envelopeItem(env.id, [{ host: b, wire: env.wire }]);
        const first = await aArmed.api.push([item]).then(
          (answer) => (answer.body['results'] as PushResult[])[0],
          () => null,
        );
        if (first !== null && first !== undefined) return first;
        return ((await a.api.push([item])).body['results'] as PushResult[])[0] as PushResult;
      }),
    );
    assert.equal(await armed.child.exited, 'SIGKILL', 'the armed process died mid-run');
    assert.ok(outcomes.every((o) => o.status === 'accepted' || o.status === 'duplicate'));
    const restarted = await relays.spawn();
    const page = (await via(restarted, b).api.pull(0, 500)).body as Page;
    assert.equal(page.items.length, IN_FLIGHT, 'nothing lost, nothing doubled');
    assert.deepEqual(new Set(page.items.map((i) => i.item_id)), new Set(envelopes.map((e) => e.id)));
    assert.deepEqual(
      page.items.map((i) => i.seq),
      outcomes.map((o) => o.targets[0]?.seq ?? 0).sort((x, y) => x - y),
      'each answer names the stored seq',
    );
    assert.equal(page.epoch, survivor.epoch);
  });
});
