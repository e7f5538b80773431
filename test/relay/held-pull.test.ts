// Held pulls (protocol.md §3.4 `wait`): a pull that finds nothing is held until an item for its
// caller commits, its wait ends, or the relay stops; bounded per process, one per host key, and a
// wake-up is never lost in the window between the pull's read and its subscription.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { HELD_PULL_EARLY_SHARE, HELD_PULL_END_TICK_MS, heldPullCap, HeldPulls } from '../../src/relay/core/held-pulls.ts';
import { HELD_PULL_HEAP_BYTES, MAX_HELD_PULLS } from '../../src/relay/fixed-limits.ts';
import { RELAY_HEAP_FLAGS } from '../../src/relay/relay-group.ts';
import type { EncodedJson } from '../../src/relay/core/encoded-json.ts';
import { HOP_MAX_SKEW_MS, signRelayHop } from '../../src/protocol/relay-hop.ts';
import { RelayApi } from '../../src/host/relay-client/api.ts';
import { enrolledAtCore, startTestCore } from '../helpers/relay-core-fixture.ts';
import { enrolledHost, pushAccepted, pushEnvelope, startTestRelay } from '../helpers/relay-fixture.ts';
import { tempDir } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';
import { waitUntil, withDeadline } from '../helpers/wait.ts';

type Page = { head_seq: number; items: Array<{ seq: number; item_id: string }>; last_seq: number; more: boolean };

/** A deadline far below the pull's wait: the pull must be answered by the event, not by its end. */
const WOKEN_WITHIN_MS = 10_000;

test('info advertises max_wait_s; a pull with items answers at once, one without is held until an item for it commits', async () => {
  const relay = await startTestRelay();
  const info = (await fetch(new URL('/v2/relay/info', relay.url)).then((r) => r.json())) as { limits: Record<string, number> };
  assert.equal(info.limits['max_wait_s'], 55);
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const first = await pushAccepted(a, b, relay.clock.now);
  const ready = (await b.api.pull(0, undefined, undefined, 50)).body as Page;
  assert.deepEqual(
    ready.items.map((i) => i.seq),
    [first],
    'items present: no hold',
  );

  const held = b.api.pull(first, undefined, undefined, 50);
  await waitUntil('the pull to be held', 5_000, async () => (relay.service.core.context.heldPulls.size === 1 ? null : 'not held'));
  const other = await enrolledHost(relay, 'tower');
  await pushAccepted(a, other, relay.clock.now);
  assert.equal(relay.service.core.context.heldPulls.size, 1, 'an item for another host does not answer it');
  const pushed = await pushEnvelope(a, b, relay.clock.now);
  const page = (await withDeadline('the held pull to answer', WOKEN_WITHIN_MS, held)).body as Page;
  assert.deepEqual(
    page.items.map((i) => i.item_id),
    [pushed.id],
  );
  assert.equal(page.last_seq, pushed.targets[0]?.seq);
  assert.equal(relay.service.core.context.heldPulls.size, 0);
});

test('a held pull ends with an empty page after its wait, never longer than max_wait_s; wait=0 and no wait answer at once', async () => {
  const relay = await startTestRelay({ limits: { max_wait_s: 1 } });
  const b = await enrolledHost(relay, 'desk');
  const started = Date.now();
  const page = (await b.api.pull(0, undefined, undefined, 3600)).body as Page;
  const took = Date.now() - started;
  assert.deepEqual({ items: page.items, last: page.last_seq, head: page.head_seq, more: page.more }, { items: [], last: 0, head: 0, more: false });
  // it may end early by up to HELD_PULL_EARLY_SHARE of the wait and one tick of the grid (the timer's own rounding: a millisecond)
  assert.ok(took >= 1000 * (1 - HELD_PULL_EARLY_SHARE) - HELD_PULL_END_TICK_MS - 1 && took < WOKEN_WITHIN_MS, `held about max_wait_s (1 s), took ${took} ms`);
  for (const wait of [0, undefined]) {
    const at = Date.now();
    await b.api.pull(0, undefined, undefined, wait);
    assert.ok(Date.now() - at < 700, `wait=${wait}: not held`);
  }
  const refused = await b.api.call('GET', '/v2/relay/items?after=0&wait=1.5');
  assert.equal(refused.status, 400);
});

test('the hop is checked when the pull arrives: a pull held past the hop skew is still answered', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  // signed 30 s inside the skew's edge; the relay's clock then moves a minute on while it is held
  const signedAt = relay.clock.now - HOP_MAX_SKEW_MS + 30_000;
  const late = new RelayApi({ baseUrl: relay.url, hostName: b.name, key: b.key, nowMs: () => signedAt });
  const held = late.pull(0, undefined, undefined, 50);
  await waitUntil('the pull to be held', 5_000, async () => (relay.service.core.context.heldPulls.size === 1 ? null : 'not held'));
  relay.clock.advance(60_000);
  const pushed = await pushEnvelope(a, b, relay.clock.now);
  const answer = await withDeadline('the held pull to answer', WOKEN_WITHIN_MS, held);
  assert.equal(answer.status, 200);
  assert.deepEqual(
    (answer.body as Page).items.map((i) => i.item_id),
    [pushed.id],
  );
  // the same hop sent now is refused: freshness is judged on arrival only
  assert.equal((await late.pull(0, undefined, undefined, 50)).status, 401);
});

test('one held pull per host key: a second pull of the same host answers the first; a pull whose client left leaves the table', async () => {
  const relay = await startTestRelay();
  const b = await enrolledHost(relay, 'desk');
  const heldPulls = relay.service.core.context.heldPulls;
  const first = b.api.pull(0, undefined, undefined, 50);
  await waitUntil('the pull to be held', 5_000, async () => (heldPulls.size === 1 ? null : 'not held'));
  const second = b.api.pull(0, undefined, undefined, 50);
  const answered = await withDeadline('the first pull to be answered by the second', WOKEN_WITHIN_MS, first);
  assert.equal(answered.status, 200);
  assert.deepEqual((answered.body as Page).items, []);
  assert.equal(heldPulls.size, 1, 'the second one holds');
  const c = await enrolledHost(relay, 'tower');
  const hop = signRelayHop({ method: 'GET', path: '/v2/relay/items?after=0&wait=50', rawBody: '' }, c.name, c.key, relay.clock.now);
  const leaving = request(new URL('/v2/relay/items?after=0&wait=50', relay.url), { headers: { ...hop } });
  const left = new Promise((resolve) => leaving.once('error', resolve));
  leaving.end();
  await waitUntil('both pulls to be held', 5_000, async () => (heldPulls.size === 2 ? null : `${heldPulls.size} held`));
  leaving.destroy();
  await left;
  await waitUntil('the abandoned pull to leave the table', 5_000, async () => (heldPulls.size === 1 ? null : `${heldPulls.size} held`));
  await relay.service.close();
  assert.equal((await withDeadline('the held pull to be answered at close', WOKEN_WITHIN_MS, second)).status, 200);
});

test('an item committed while the pull reads, after its snapshot, is not missed (its wake-up makes the pull read again)', async () => {
  let inWindow: (() => Promise<void>) | null = null;
  const heldPulls = new HeldPulls<EncodedJson>({
    afterRead: async () => {
      await inWindow?.();
    },
  });
  const relay = await startTestCore({ heldPulls });
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  let pushedId = '';
  // the push commits (and its wake-up comes) after the pull's read saw an empty queue, before the pull looks at that page
  inWindow = async () => {
    inWindow = null;
    pushedId = (await pushEnvelope(a, b, relay.clock.now)).id;
  };
  const page = (await withDeadline('the pull to find the item of the window', WOKEN_WITHIN_MS, b.api.pull(0, undefined, 50))).body as Page;
  assert.deepEqual(
    page.items.map((i) => i.item_id),
    [pushedId],
  );
});

test('a held pull reads the store once when nothing comes, and once more per wake-up; a wake during a read reads again after it', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  const reads: string[] = [];
  let pages: { answer: string; empty: boolean }[] = [];
  let inRead: (() => void) | null = null;
  const read = async (priority: string) => {
    reads.push(priority);
    await new Promise<void>((resolve) => {
      inRead = resolve;
    });
    return pages.shift() ?? { answer: 'empty', empty: true };
  };
  const finishRead = async () => {
    const done = inRead;
    inRead = null;
    done?.();
    await settle();
  };
  const table = new HeldPulls<string>({ random: () => 0, nowMs: () => 0 });

  // nothing comes: one read, and the wait's end answers its page without another
  const quiet = table.pull('desk', 10_000, read);
  await finishRead();
  t.mock.timers.tick(10_000);
  await settle();
  assert.equal(await quiet, 'empty');
  assert.deepEqual(reads, ['held']);

  // a wake-up while the first read runs: read again after it ('woken'), and answer the item it finds
  reads.length = 0;
  pages = [
    { answer: 'empty', empty: true },
    { answer: 'item 1', empty: false },
  ];
  const woken = table.pull('desk', 10_000, read);
  table.wake(['desk']);
  table.wake(['desk']);
  await finishRead();
  await finishRead();
  assert.equal(await woken, 'item 1');
  assert.deepEqual(reads, ['held', 'woken'], 'two wakes during one read: one read after it');

  // a wake for another host reads nothing; the wait's end still answers without a read
  reads.length = 0;
  const other = table.pull('desk', 10_000, read);
  await finishRead();
  table.wake(['tower']);
  t.mock.timers.tick(10_000);
  await settle();
  assert.equal(await other, 'empty');
  assert.deepEqual(reads, ['held']);
  assert.equal(table.size, 0);
});

test('past the cap of held pulls, and while the relay stops, a pull is answered at once', async () => {
  const heldPulls = new HeldPulls<EncodedJson>({ cap: 1 });
  const relay = await startTestCore({ heldPulls });
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  const c = await enrolledAtCore(relay, 'tower');
  const held = b.api.pull(0, undefined, 50);
  await waitUntil('the pull to be held', 5_000, async () => (heldPulls.size === 1 ? null : 'not held'));
  const overCap = await withDeadline('the pull past the cap to answer at once', WOKEN_WITHIN_MS, c.api.pull(0, undefined, 50));
  assert.deepEqual((overCap.body as Page).items, []);
  const pushed = await pushEnvelope(a, b, relay.clock.now);
  assert.deepEqual(
    ((await held).body as Page).items.map((i) => i.item_id),
    [pushed.id],
  );
  const again = b.api.pull(pushed.targets[0]?.seq ?? 0, undefined, 50);
  await waitUntil('the pull to be held', 5_000, async () => (heldPulls.size === 1 ? null : 'not held'));
  heldPulls.close();
  assert.deepEqual(((await withDeadline('close to answer the held pull', WOKEN_WITHIN_MS, again)).body as Page).items, []);
  assert.deepEqual(((await withDeadline('a pull after close to answer at once', WOKEN_WITHIN_MS, c.api.pull(0, undefined, 50))).body as Page).items, []);
});

test('a held pull ends in the last fifth of its wait, drawn at random: hosts that pulled together spread out', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const empty = async () => ({ answer: 'empty page', empty: true });
  for (const [draw, endsAtMs] of [
    [0, 10_000],
    [1, 10_000 * (1 - HELD_PULL_EARLY_SHARE)],
    [0.5, 10_000 * (1 - HELD_PULL_EARLY_SHARE / 2)],
  ] as const) {
    const table = new HeldPulls<string>({ random: () => draw, nowMs: () => 0 });
    let answered = false;
    const pull = table.pull('desk', 10_000, empty).then((answer) => {
      answered = true;
      return answer;
    });
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(endsAtMs - 1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false, `draw ${draw}: still held 1 ms before ${endsAtMs} ms`);
    t.mock.timers.tick(1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, true, `draw ${draw}: answered at ${endsAtMs} ms`);
    assert.equal(await pull, 'empty page');
  }
});

test('held pulls whose waits end within one tick are answered together when it starts (their re-pulls then come together)', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = 0;
  const table = new HeldPulls<string>({ random: () => 0, nowMs: () => now });
  const answered: string[] = [];
  const empty = async () => ({ answer: 'empty page', empty: true });
  const tick = 40 * HELD_PULL_END_TICK_MS;
  const first = table.pull('desk', tick + 100, empty).then(() => answered.push('desk'));
  now = HELD_PULL_END_TICK_MS / 2;
  const second = table.pull('tower', tick + 200 - now, empty).then(() => answered.push('tower'));
  await new Promise((resolve) => setImmediate(resolve));
  t.mock.timers.tick(tick - 1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(answered, [], 'neither is answered before its tick');
  t.mock.timers.tick(1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(answered.sort(), ['desk', 'tower'], 'both when their tick starts (a little before their waits end, never after)');
  await Promise.all([first, second]);
});

test('the held-pull cap fits the heap: about 10,800 in a 192 MB old space, MAX_HELD_PULLS in a large heap', () => {
  const relayHeap = 216 * 1024 * 1024; // 192 MiB old space and three 8 MiB semispaces, as bin/agentmbx starts a relay
  assert.ok(heldPullCap(relayHeap) * HELD_PULL_HEAP_BYTES <= 0.6 * relayHeap, 'the held pulls take at most 60 % of the heap');
  assert.ok(heldPullCap(relayHeap) > 10_000, 'a worker of --workers 2 holds half of 20,000 hosts');
  assert.equal(heldPullCap(4 * 1024 ** 3), MAX_HELD_PULLS);
  assert.equal(new HeldPulls().cap, heldPullCap());
});

test('SIGTERM answers every held pull, then the relay exits; /metrics names the cap of its heap', { timeout: 60_000 }, async () => {
  // the heap bin/agentmbx gives a relay (RELAY_HEAP_FLAGS): with a cap of 50,000 it ran out of heap near 19,000 held pulls
  const relay = await spawnRelay(tempDir('agentmbx-held-'), { env: { NODE_OPTIONS: RELAY_HEAP_FLAGS.join(' ') } });
  const limit = Number(/^agentmbx_held_pulls_limit (\d+)$/m.exec(await (await fetch(new URL('/metrics', relay.url))).text())?.[1]);
  assert.ok(limit > 10_000 && limit < 19_000, `held pulls limit ${limit}`);
  const hosts = await Promise.all(['desk', 'tower', 'attic'].map((name) => enrolledHost(relay, name)));
  const pulls = hosts.map((h) => h.api.pull(0, undefined, undefined, 50));
  await waitUntil('the pulls to be held', 10_000, async () => {
    const held = /^agentmbx_held_pulls (\d+)$/m.exec(await (await fetch(new URL('/metrics', relay.url))).text())?.[1];
    return held === '3' ? null : `${held} held`;
  });
  relay.child.kill('SIGTERM');
  const answers = await withDeadline('SIGTERM to answer the held pulls', WOKEN_WITHIN_MS, Promise.all(pulls));
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200],
  );
  assert.equal(await relay.child.exited, 0);
});
