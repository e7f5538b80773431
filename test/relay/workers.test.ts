// A relay group in one test process: the leader (writer lock, start-up check, heartbeat, sweeps) and
// two workers serving HTTP on their own ports and their own connections to one store, as the
// processes of `relay serve --workers 2` do behind one port. Each request is sent to the worker the
// test chooses, so that what crosses processes is exercised every time.
import assert from 'node:assert/strict';
import { test, after } from 'node:test';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { DEFAULT_CONFIG, type RelayConfig } from '../../src/relay/config.ts';
import { startRelayLeader, startRelayService, workerVerifyThreads, type RelayService } from '../../src/relay/relay-service.ts';
import { acquireWriterLock, WriterLockBusyError } from '../../src/relay/ops/writer-lock.ts';
import { enrolledHost, envelopeItem, testHost, sealedEnvelope, type TestHost } from '../helpers/relay-fixture.ts';
import { TestClock } from '../helpers/clock.ts';
import { tempDir } from '../helpers/processes.ts';

async function startGroup(settings: Partial<RelayConfig> = {}) {
  const dir = tempDir('agentmbx-group-');
  const clock = new TestClock();
  const config: RelayConfig = { ...DEFAULT_CONFIG, ...settings };
  const common = { storeDir: dir, port: 0, bind: '127.0.0.1', config, env: {}, nowMs: clock.nowMs, log: () => {} };
  const leader = await startRelayLeader(common);
  const workers: RelayService[] = [];
  for (let i = 0; i < 2; i += 1) workers.push(await startRelayService({ ...common, role: 'worker' }));
  after(async () => {
    for (const worker of workers) await worker.close();
    await leader.close();
  });
  const [a, b] = workers.map((w) => ({ url: w.url, clock })) as [{ url: string; clock: TestClock }, { url: string; clock: TestClock }];
  return { dir, clock, leader, workers, a, b };
}

async function post(url: string, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await fetch(new URL(path, url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

/** The same host (same key) talking to another worker. */
function via(at: { url: string; clock: TestClock }, host: TestHost): TestHost {
  return { ...testHost(at, host.name, host.key), enc: host.enc };
}

test('a challenge issued by one worker is accepted by the other, once', async () => {
  const { a, b } = await startGroup();
  const key = generateSigningKey();
  const issued = await post(a.url, '/v1/relay/challenge', { host: 'laptop', pubkey: key.publicKey });
  assert.equal(issued.status, 200);
  const sig = key.sign(canonicalJson({ v: 1, challenge: issued.body['challenge'], host: 'laptop', pubkey: key.publicKey, owner_fp: '' }));
  const enrol = { host: 'laptop', pubkey: key.publicKey, owner_fp: '', sig };
  assert.equal((await post(b.url, '/v1/relay/enrol', enrol)).status, 200, 'the other worker accepts it');
  const replay = await post(a.url, '/v1/relay/enrol', enrol);
  assert.equal(replay.status, 401, 'single use across the group');
  assert.match(String(replay.body['error']), /no open challenge/);
});

test('the push rate holds for the group: pushes alternating between workers share one window', async () => {
  const { a, b, clock } = await startGroup({ pushes_per_minute: 3 });
  const sender = await enrolledHost(a, 'laptop');
  const target = await enrolledHost(a, 'desk');
  const statuses: string[] = [];
  for (let i = 0; i < 6; i += 1) {
    const env = sealedEnvelope(sender, target, clock.nowMs());
    const answer = await via(i % 2 === 0 ? a : b, sender).api.push([envelopeItem(env.id, [{ host: target, wire: env.wire }])]);
    statuses.push((answer.body['results'] as Array<{ status: string }>)[0]?.status ?? '');
  }
  assert.deepEqual(statuses, ['accepted', 'accepted', 'accepted', 'rejected:rate', 'rejected:rate', 'rejected:rate']);
  clock.advance(60_000);
  const env = sealedEnvelope(sender, target, clock.nowMs());
  const later = await via(b, sender).api.push([envelopeItem(env.id, [{ host: target, wire: env.wire }])]);
  assert.equal((later.body['results'] as Array<{ status: string }>)[0]?.status, 'accepted', 'a new minute, a new window');
});

test('concurrent pushes through both workers: one seq each, pulled in increasing order, retries are duplicates', async () => {
  const { a, b, clock } = await startGroup({ pushes_per_minute: 1_000 });
  const sender = await enrolledHost(a, 'laptop');
  const target = await enrolledHost(b, 'desk');
  const items = Array.from({ length: 40 }, () => {
    const env = sealedEnvelope(sender, target, clock.nowMs());
    return envelopeItem(env.id, [{ host: target, wire: env.wire }]);
  });
  type Result = { item_id: string; status: string; targets: Array<{ seq: number }> };
  const push = async (at: typeof a, item: unknown): Promise<Result> => ((await via(at, sender).api.push([item])).body['results'] as Result[])[0] as Result;
  const first = await Promise.all(items.map((item, i) => push(i % 2 === 0 ? a : b, item)));
  assert.ok(first.every((r) => r.status === 'accepted'));
  const seqs = first.map((r) => r.targets[0]?.seq as number);
  assert.equal(new Set(seqs).size, items.length, 'no seq given twice');
  const retries = await Promise.all(items.map((item, i) => push(i % 2 === 0 ? b : a, item)));
  assert.deepEqual(
    retries.map((r) => [r.status, r.targets[0]?.seq]),
    first.map((r) => ['duplicate', r.targets[0]?.seq]),
    'the other worker knows every item',
  );
  const page = (await via(a, target).api.pull(0, 500)).body as { items: Array<{ seq: number }> };
  const pulled = page.items.map((i) => i.seq);
  assert.deepEqual(
    pulled,
    [...seqs].sort((x, y) => x - y),
    'every item once, in seq order',
  );
});

test('the leader holds the one writer lock of the group: another relay on the store is refused', async () => {
  const { dir } = await startGroup();
  await assert.rejects(acquireWriterLock(dir), WriterLockBusyError);
});

test('hop-verify threads are sized to the cores: a worker gets at most its share of the cores no worker runs on', () => {
  assert.equal(workerVerifyThreads(1, 2, 2), 0, 'every core runs a worker: checks on the event loops');
  assert.equal(workerVerifyThreads(1, 2, 8), 1, 'the setting caps the share');
  assert.equal(workerVerifyThreads(4, 2, 8), 3);
  assert.equal(workerVerifyThreads(2, 4, 2), 0, 'more workers than cores');
});
