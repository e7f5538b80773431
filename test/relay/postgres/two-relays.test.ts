// The relay's HTTP behaviour with two relay processes on one PostgreSQL database: any process
// answers any request, and the queue, dedup and seqs are one, whichever process a call reaches.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { enrolledHost, envelopeItem, testHost, sealedEnvelope, type TestHost } from '../../helpers/relay-fixture.ts';
import { freshPostgresDatabase } from '../../helpers/postgres-test-cluster.ts';
import { spawnPostgresRelays, type RelayGroup } from '../../helpers/postgres-relays.ts';
import { runCli } from '../../helpers/processes.ts';
import type { RelayProcess } from '../../helpers/relay-process.ts';

type PushResult = { status: string; targets: Array<{ host_pubkey: string; seq: number }> };
type Page = { items: Array<{ seq: number; item_id: string }>; head_seq: number; epoch: string; more: boolean };

/** Pushes sent through both relays at once in the concurrent test. */
const CONCURRENT_PUSHES = 40;

const database = await freshPostgresDatabase();

/** The same host (same key) talking to another relay of the group. */
function via(relay: RelayProcess, host: TestHost): TestHost {
  return { ...testHost(relay, host.name, host.key), enc: host.enc };
}

async function pushOne(host: TestHost, item: unknown): Promise<PushResult> {
  const answer = await host.api.push([item]);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return (answer.body['results'] as PushResult[])[0] as PushResult;
}

describe('two relay processes on one PostgreSQL database', { skip: 'skip' in database ? database.skip : false }, () => {
  const url = 'url' in database ? database.url : '';
  let group: RelayGroup;
  let first: RelayProcess;
  let second: RelayProcess;

  before(async () => {
    group = await spawnPostgresRelays(url, 2);
    [first, second] = group.relays as [RelayProcess, RelayProcess];
  });

  test('both answer info with one relay key and one epoch', async () => {
    const infos = await Promise.all(
      [first, second].map(async (relay) => (await fetch(`${relay.url}/v2/relay/info`)).json() as Promise<Record<string, unknown>>),
    );
    assert.equal(infos[0]?.['relay_pubkey'], infos[1]?.['relay_pubkey']);
    assert.equal(infos[0]?.['epoch'], infos[1]?.['epoch']);
    assert.equal(first.epoch, second.epoch);
  });

  test('enrolled at one, pushed through the other, pulled and acked on either: one queue', async () => {
    const a = await enrolledHost(first, 'laptop');
    const b = await enrolledHost(second, 'desk');
    const env = sealedEnvelope(a, b, Date.now());
    const pushed = await pushOne(via(second, a), envelopeItem(env.id, [{ host: b, wire: env.wire }]));
    assert.equal(pushed.status, 'accepted');
    const page = (await via(first, b).api.pull(0)).body as Page;
    assert.deepEqual(
      page.items.map((i) => i.item_id),
      [env.id],
    );
    assert.equal(page.items[0]?.seq, pushed.targets[0]?.seq);
    const again = await pushOne(a, envelopeItem(env.id, [{ host: b, wire: env.wire }]));
    assert.equal(again.status, 'duplicate', 'the other relay knows the item');
    assert.equal(again.targets[0]?.seq, pushed.targets[0]?.seq);
    assert.equal((await b.api.ack(page.items[0]?.seq ?? 0, page.epoch)).status, 200);
    assert.deepEqual(((await via(first, b).api.pull(0)).body as Page).items, [], 'the ack through one relay emptied the queue for both');
  });

  test('one item pushed through both relays at the same moment is stored once: one accepted, one duplicate, one seq', async () => {
    const a = await enrolledHost(first, 'phone');
    const b = await enrolledHost(first, 'server');
    const env = sealedEnvelope(a, b, Date.now());
    const item = envelopeItem(env.id, [{ host: b, wire: env.wire }]);
    const results = await Promise.all([pushOne(a, item), pushOne(via(second, a), item)]);
    assert.deepEqual(results.map((r) => r.status).sort(), ['accepted', 'duplicate']);
    assert.equal(results[0]?.targets[0]?.seq, results[1]?.targets[0]?.seq);
    assert.equal(((await b.api.pull(0)).body as Page).items.length, 1);
  });

  test('concurrent pushes through both relays: each stored once, seqs increasing, the queue complete', async () => {
    const a = await enrolledHost(first, 'builder');
    const b = await enrolledHost(second, 'archive');
    const sides = [a, via(second, a)];
    const envelopes = Array.from({ length: CONCURRENT_PUSHES }, (_, i) => sealedEnvelope(a, b, Date.now() + i));
    const results = await Promise.all(envelopes.map((env, i) => pushOne(sides[i % 2] as TestHost, envelopeItem(env.id, [{ host: b, wire: env.wire }]))));
    assert.ok(results.every((r) => r.status === 'accepted'));
    const seqs = results.map((r) => r.targets[0]?.seq ?? 0);
    assert.equal(new Set(seqs).size, seqs.length, 'no seq handed out twice');
    const page = (await b.api.pull(0)).body as Page;
    assert.deepEqual(
      page.items.map((i) => i.seq),
      [...seqs].sort((x, y) => x - y),
    );
    assert.deepEqual(new Set(page.items.map((i) => i.item_id)), new Set(envelopes.map((e) => e.id)));
    assert.equal(page.head_seq, Math.max(...seqs));
  });

  // last: it stops the relays
  test('rotate-epoch is refused while a relay serves; once all stopped it rotates, logs, and restarted relays serve the new epoch', async () => {
    const refused = await runCli(['relay', 'rotate-epoch', '--store', url]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /a relay process is serving the store at postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+: stop every relay process/);
    for (const relay of [first, second]) {
      relay.child.kill('SIGTERM');
      assert.equal(await relay.child.exited, 0);
    }
    const rotated = await runCli(['relay', 'rotate-epoch', '--store', url, '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const { from, to } = JSON.parse(rotated.stdout) as { from: string; to: string };
    assert.equal(from, first.epoch);
    const log = await runCli(['relay', 'log', '--json'], { MBX_RELAY_STORE: url });
    assert.equal(log.code, 0, log.stderr);
    assert.deepEqual(
      (JSON.parse(log.stdout) as Array<{ kind: string; detail: { to: string } }>).map((e) => [e.kind, e.detail.to]),
      [['epoch-rotated', to]],
    );
    const restarted = await group.spawn();
    assert.equal(restarted.epoch, to);
  });
});
