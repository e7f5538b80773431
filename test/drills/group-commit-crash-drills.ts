// SIGKILL drills of group commit through the real relay: the items of one push share a commit, so a
// crash before it leaves none of them and a crash after it leaves all of them. Run for a lone relay
// (group-commit-crash.test.ts) and for `relay serve --workers 2` (relay-crash-workers.test.ts).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { enrolledHost, envelopeItem, testHost, sealedEnvelope, type TestHost } from '../helpers/relay-fixture.ts';
import { tempDir } from '../helpers/processes.ts';
import { diesAtFailpoint, spawnRelay } from '../helpers/relay-process.ts';

type Result = { status: string; targets: Array<{ seq: number }> };

async function batchOfThree(failpoint: string, workers: number) {
  const dir = tempDir('agentmbx-drill-');
  // a group open for up to a second: a cold first push cannot close it before the batch is in
  const config = join(tempDir('agentmbx-config-'), 'relay.json');
  writeFileSync(config, JSON.stringify({ group_commit_max_wait_ms: 1_000 }));
  const relay = await spawnRelay(dir, { failpoint, workers, args: ['--config', config] });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const items = [1, 2, 3].map((n) => {
    const env = sealedEnvelope(a, b, Date.now(), `subject ${n}`);
    return envelopeItem(env.id, [{ host: b, wire: env.wire }]);
  });
  await diesAtFailpoint(relay, a.api.push(items));
  const restarted = await spawnRelay(dir, { workers });
  const [a2, b2] = [a, b].map((h) => ({ ...testHost(restarted, h.name, h.key), enc: h.enc })) as [TestHost, TestHost];
  return { items, a2, b2 };
}

export function groupCommitCrashDrills(workers: number): void {
  const label = workers === 1 ? '' : `${workers} workers: `;
  test(`${label}killed after the shared commit: every item of the batch is stored, the retry is all duplicates`, async () => {
    const { items, a2, b2 } = await batchOfThree('relay.push.after-commit', workers);
    const page = (await b2.api.pull(0)).body as { items: Array<{ item_id: string; seq: number }> };
    assert.deepEqual(
      page.items.map((i) => i.item_id),
      items.map((i) => i.item_id),
      'the first answer never went out, yet all three committed',
    );
    const retry = (await a2.api.push(items)).body['results'] as Result[];
    assert.deepEqual(
      retry.map((r) => r.status),
      ['duplicate', 'duplicate', 'duplicate'],
    );
    assert.deepEqual(
      retry.map((r) => r.targets[0]?.seq),
      page.items.map((i) => i.seq),
    );
  });

  test(`${label}killed inside the group before its commit: no item of the batch is stored`, async () => {
    const { items, a2, b2 } = await batchOfThree('relay.push.before-commit', workers);
    assert.equal(((await b2.api.pull(0)).body as { head_seq: number }).head_seq, 0);
    const retry = (await a2.api.push(items)).body['results'] as Result[];
    assert.deepEqual(
      retry.map((r) => r.status),
      ['accepted', 'accepted', 'accepted'],
    );
  });
}
