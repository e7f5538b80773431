// The relay killed with SIGKILL at its commit and response boundaries (design §5 crash windows):
// a real child process, a real store, a retry after the restart. Run for a lone relay
// (relay-crash.test.ts) and for a group of two workers (relay-crash-workers.test.ts), where the
// worker serving the call dies at the fault point and the group is then killed whole.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { enrolledHost, envelopeItem, testHost, sealedEnvelope, type TestHost } from '../helpers/relay-fixture.ts';
import { tempDir } from '../helpers/processes.ts';
import { diesAtFailpoint, spawnRelay, type RelayProcess } from '../helpers/relay-process.ts';

type Result = { status: string; targets: Array<{ seq: number }> };

/** The same hosts (same keys) talking to the restarted relay at its new address. */
function reconnect(relay: RelayProcess, hosts: TestHost[]): TestHost[] {
  return hosts.map((h) => ({ ...testHost(relay, h.name, h.key), enc: h.enc }));
}

async function setup(failpoint: string, workers: number) {
  const dir = tempDir('agentmbx-drill-');
  const first = await spawnRelay(dir, { failpoint, workers });
  const a = await enrolledHost(first, 'laptop');
  const b = await enrolledHost(first, 'desk');
  const env = sealedEnvelope(a, b, Date.now());
  return { dir, first, a, b, env, item: envelopeItem(env.id, [{ host: b, wire: env.wire }]) };
}

export function relayCrashDrills(workers: number): void {
  const label = workers === 1 ? '' : `${workers} workers: `;
  test(`${label}relay commits, then dies before answering: the retry is a duplicate with the same seq`, async () => {
    const { dir, first, a, b, item } = await setup('relay.push.after-commit', workers);
    await diesAtFailpoint(first, a.api.push([item]));
    const second = await spawnRelay(dir, { workers });
    assert.equal(second.epoch, first.epoch, 'a restart keeps the epoch');
    const [a2, b2] = reconnect(second, [a, b]) as [TestHost, TestHost];
    const retry = ((await a2.api.push([item])).body['results'] as Result[])[0];
    assert.equal(retry?.status, 'duplicate');
    const page = (await b2.api.pull(0)).body as { items: Array<{ seq: number }> };
    assert.equal(page.items.length, 1, 'stored exactly once');
    assert.equal(page.items[0]?.seq, retry?.targets[0]?.seq, 'the duplicate names the seq of the committed item');
  });

  test(`${label}relay dies inside the push transaction: nothing is stored, the retry is accepted once`, async () => {
    const { dir, a, b, item, first } = await setup('relay.push.before-commit', workers);
    await diesAtFailpoint(first, a.api.push([item]));
    const second = await spawnRelay(dir, { workers });
    const [a2, b2] = reconnect(second, [a, b]) as [TestHost, TestHost];
    assert.equal(((await b2.api.pull(0)).body as { head_seq: number }).head_seq, 0, 'the uncommitted item left nothing');
    assert.equal(((await a2.api.push([item])).body['results'] as Result[])[0]?.status, 'accepted');
    assert.equal(((await a2.api.push([item])).body['results'] as Result[])[0]?.status, 'duplicate');
    assert.equal(((await b2.api.pull(0)).body as { items: unknown[] }).items.length, 1);
  });

  test(`${label}relay dies before the pull answer or inside the ack: the items are still there`, async () => {
    for (const failpoint of ['relay.pull.before-response', 'relay.ack.before-commit']) {
      const dir = tempDir('agentmbx-drill-');
      const clean = await spawnRelay(dir, { workers });
      const a = await enrolledHost(clean, 'laptop');
      const b = await enrolledHost(clean, 'desk');
      const env = sealedEnvelope(a, b, Date.now());
      await a.api.push([envelopeItem(env.id, [{ host: b, wire: env.wire }])]);
      const { head_seq: head, epoch } = (await b.api.pull(0)).body as { head_seq: number; epoch: string };
      clean.child.kill('SIGTERM');
      assert.equal(await clean.child.exited, 0, 'SIGTERM is a clean stop');

      const armed = await spawnRelay(dir, { failpoint, workers });
      const [, bArmed] = reconnect(armed, [a, b]) as [TestHost, TestHost];
      await diesAtFailpoint(armed, failpoint.startsWith('relay.pull') ? bArmed.api.pull(0) : bArmed.api.ack(head, epoch));
      const after = await spawnRelay(dir, { workers });
      const [, b3] = reconnect(after, [a, b]) as [TestHost, TestHost];
      const page = (await b3.api.pull(0)).body as { items: Array<{ item_id: string }> };
      assert.deepEqual(
        page.items.map((i) => i.item_id),
        [env.id],
        failpoint,
      );
    }
  });

  test(`${label}relay dies after the ack commit: the ack held, and acking again is harmless`, async () => {
    const dir = tempDir('agentmbx-drill-');
    const armed = await spawnRelay(dir, { failpoint: 'relay.ack.after-commit', workers });
    const a = await enrolledHost(armed, 'laptop');
    const b = await enrolledHost(armed, 'desk');
    const env = sealedEnvelope(a, b, Date.now());
    await a.api.push([envelopeItem(env.id, [{ host: b, wire: env.wire }])]);
    const { head_seq: head, epoch } = (await b.api.pull(0)).body as { head_seq: number; epoch: string };
    await diesAtFailpoint(armed, b.api.ack(head, epoch));
    const after = await spawnRelay(dir, { workers });
    const [, b2] = reconnect(after, [a, b]) as [TestHost, TestHost];
    assert.equal(((await b2.api.pull(0)).body as { items: unknown[] }).items.length, 0);
    assert.deepEqual((await b2.api.ack(head, epoch)).body, { acked_through: head, deleted: 0, head_seq: head });
  });
}
