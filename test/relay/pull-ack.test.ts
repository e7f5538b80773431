// Pull pages and acks over a real relay (design §4, protocol.md §3.4–§3.5).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { enrolledHost, envelopeItem, sealedEnvelope, startTestRelay, type TestHost, type TestRelay } from '../helpers/relay-fixture.ts';

type Page = { epoch: string; head_seq: number; items: Array<{ seq: number; item_id: string; wire_b64: string }>; last_seq: number; more: boolean };

async function fill(relay: TestRelay, from: TestHost, to: TestHost, count: number, body = 'x'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const env = sealedEnvelope(from, to, relay.clock.now, `m${i}`, body);
    const answer = await from.api.push([envelopeItem(env.id, [{ host: to, wire: env.wire }])]);
    assert.equal((answer.body['results'] as Array<{ status: string }>)[0]?.status, 'accepted');
    ids.push(env.id);
  }
  return ids;
}

test('pages by count: last_seq, head_seq and more; an empty page keeps after', async () => {
  const relay = await startTestRelay({ limits: { max_pull: 2 } });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const empty = (await b.api.pull(0)).body as Page;
  assert.deepEqual({ head: empty.head_seq, items: empty.items, last: empty.last_seq, more: empty.more }, { head: 0, items: [], last: 0, more: false });
  const ids = await fill(relay, a, b, 5);

  const seen: string[] = [];
  let after = 0;
  let pages = 0;
  for (;;) {
    const page = (await b.api.pull(after, 10)).body as Page;
    pages += 1;
    assert.ok(page.items.length <= 2, 'limit is clamped to max_pull');
    assert.equal(page.epoch, relay.service.epoch);
    seen.push(...page.items.map((i) => i.item_id));
    assert.equal(page.last_seq, page.items.at(-1)?.seq ?? after);
    after = page.last_seq;
    if (!page.more) {
      assert.equal(page.head_seq, page.last_seq);
      break;
    }
  }
  assert.deepEqual(seen, ids, 'every item once, in seq order');
  assert.equal(pages, 3);
  const past = (await b.api.pull(after)).body as Page;
  assert.deepEqual([past.items.length, past.last_seq, past.more], [0, after, false]);
  assert.equal(((await b.api.pull(0, 0)).body as Page).items.length, 1, 'a limit below 1 is 1');
});

test('pages by bytes stop before the item that would pass max_pull_bytes, never empty', async () => {
  const relay = await startTestRelay({ limits: { max_pull_bytes: 1500 } });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  await fill(relay, a, b, 3, 'y'.repeat(300));
  const first = (await b.api.pull(0)).body as Page;
  assert.equal(first.items.length, 1, 'one item of ~1.2 KB fits, two do not');
  assert.equal(first.more, true);
  const tiny = await startTestRelay({ limits: { max_pull_bytes: 10 } });
  const ta = await enrolledHost(tiny, 'laptop');
  const tb = await enrolledHost(tiny, 'desk');
  await fill(tiny, ta, tb, 2);
  const page = (await tb.api.pull(0)).body as Page;
  assert.equal(page.items.length, 1, 'an item larger than the page cap still comes alone');
});

test('bad pull parameters and a stale epoch', async () => {
  const relay = await startTestRelay();
  const b = await enrolledHost(relay, 'desk');
  for (const after of ['-1', '1.5', 'abc', '1e3']) {
    const answer = await b.api.call('GET', `/v2/relay/items?after=${after}`);
    assert.equal(answer.status, 400, `after=${after}`);
  }
  const stale = await b.api.pull(0, undefined, 'not-the-epoch');
  assert.equal(stale.status, 409);
  assert.deepEqual(stale.body, { error: 'relay epoch changed: pull again from 0', code: 'EPOCH', epoch: relay.service.epoch });
  assert.equal((await b.api.pull(0, undefined, relay.service.epoch)).status, 200);
});

test('ack deletes through, never goes down, and refuses what is beyond the head', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  await fill(relay, a, b, 3);
  const page = (await b.api.pull(0)).body as Page;
  const [s1, s2] = page.items.map((i) => i.seq) as [number, number, number];
  const first = await b.api.ack(s2, relay.service.epoch);
  assert.deepEqual(first.body, { acked_through: s2, deleted: 2, head_seq: page.head_seq });
  const lower = await b.api.ack(s1, relay.service.epoch);
  assert.deepEqual(lower.body, { acked_through: s2, deleted: 0, head_seq: page.head_seq }, 'acked_through never goes down');
  assert.equal(((await b.api.pull(0)).body as Page).items.length, 1);

  for (const through of [page.head_seq + 1, -1, 1.5, '5', null]) {
    const bad = await b.api.call('POST', '/v2/relay/ack', { epoch: relay.service.epoch, through });
    assert.equal(bad.status, 400, `through=${String(through)}`);
    assert.equal(bad.body['code'], 'BAD_ACK');
  }
  const stale = await b.api.ack(page.head_seq, 'old-epoch');
  assert.equal(stale.status, 409);
  assert.deepEqual(stale.body, { error: 'relay epoch changed: pull again from 0', code: 'EPOCH', epoch: relay.service.epoch, head_seq: page.head_seq });

  const info = await b.api.info();
  const you = info.body['you'] as Record<string, unknown>;
  assert.equal(you['acked_through'], s2);
  assert.equal(you['head_seq'], page.head_seq);
});

test('a v2 ack that names no epoch is refused with the current one and deletes nothing', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const ids = await fill(relay, a, b, 2);
  const head = ((await b.api.pull(0)).body as Page).head_seq;
  for (const body of [{ through: head }, { through: head, epoch: null }, { through: head, epoch: '' }, []]) {
    const refused = await b.api.call('POST', '/v2/relay/ack', body);
    assert.equal(refused.status, 409, JSON.stringify(body));
    assert.deepEqual(refused.body, { error: 'an ack must name the relay epoch: pull again from 0', code: 'EPOCH', epoch: relay.service.epoch, head_seq: head });
  }
  const still = (await b.api.pull(0)).body as Page;
  assert.deepEqual(
    still.items.map((i) => i.item_id),
    ids,
    'every item is still pullable',
  );
  assert.equal(((await b.api.info()).body['you'] as Record<string, unknown>)['acked_through'], 0);
  assert.deepEqual((await b.api.ack(head, relay.service.epoch)).body, { acked_through: head, deleted: 2, head_seq: head }, 'the same ack naming the epoch');
});
