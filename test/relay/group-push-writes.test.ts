// The pushes of a relay group written by its primary (group-push-writes.ts): a worker's writer over
// the IPC channel (here in one process, through the same V8 serializer) to the primary's writer on a
// real store.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkItem, type CheckedItem } from '../../src/relay/core/item-checks.ts';
import type { ItemOutcome, PushWriter } from '../../src/relay/core/push-writes.ts';
import { MAX_WAITING_PUSH_WRITES, primaryPushWriter, servePushWrites } from '../../src/relay/group-push-writes.ts';
import { StoreClosedError, StoreDiskError, StoreOverloadedError } from '../../src/relay/store/errors.ts';
import { linkedChannels } from '../helpers/group-channel.ts';
import { enrolledAtCore, startTestCore } from '../helpers/relay-core-fixture.ts';
import { envelopeItemTo } from '../helpers/relay-fixture.ts';

test('a worker hands its checked items to the primary, which stores them: wires arrive whole, outcomes in order', async () => {
  const relay = await startTestCore();
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  const channel = linkedChannels();
  servePushWrites(channel.primary, relay.context.pushWriter);
  const viaPrimary = primaryPushWriter(channel.worker, '/nowhere');
  const sent = envelopeItemTo(a, b, relay.clock.now);
  const items = [checkItem(sent.item, a.key.publicKey, relay.context.config.limits), checkItem({ kind: 'bad' }, a.key.publicKey, relay.context.config.limits)];
  const outcomes = await viaPrimary.write(a.key.publicKey, items);
  assert.equal(outcomes.length, 2);
  assert.ok('stored' in (outcomes[0] as ItemOutcome));
  assert.deepEqual(outcomes[1], { rejected: 'bad item id' });
  const page = (await b.api.pull(0)).body as { items: Array<{ targets?: unknown; wire_b64?: string }> };
  assert.equal(Buffer.from(page.items[0]?.wire_b64 ?? '', 'base64').toString('utf8'), sent.wire, 'the wire stored byte for byte');
  assert.deepEqual(await viaPrimary.write(a.key.publicKey, items.slice(0, 1)).then((o) => o.map((x) => 'stored' in x && x.stored[0]?.isNew)), [false], 'a retry is a duplicate');
  channel.close();
});

/** A primary whose writer fails every write with `error`. */
function failingPrimary(error: Error): PushWriter {
  const channel = linkedChannels();
  servePushWrites(channel.primary, { write: () => Promise.reject(error) });
  return primaryPushWriter(channel.worker, '/nowhere');
}

const noItems: CheckedItem[] = [];

test('the primary\'s store refusals reach the worker as the same kinds (disk fault, busy), other failures as plain errors', async () => {
  const full = await failingPrimary(new StoreDiskError('full', '/nowhere')).write('k', noItems).catch((e: unknown) => e);
  assert.ok(full instanceof StoreDiskError && full.fault === 'full');
  assert.ok(await failingPrimary(new StoreOverloadedError()).write('k', noItems).catch((e: unknown) => e) instanceof StoreOverloadedError);
  assert.ok(await failingPrimary(new StoreClosedError()).write('k', noItems).catch((e: unknown) => e) instanceof StoreOverloadedError);
  const other = await failingPrimary(new Error('boom')).write('k', noItems).catch((e: unknown) => e);
  assert.ok(other instanceof Error && /could not write a push: boom/.test(other.message));
});

test('writes waiting when the primary goes fail as a closed store, and later ones are refused at once', async () => {
  const channel = linkedChannels();
  servePushWrites(channel.primary, { write: () => new Promise<never>(() => {}) });
  const writer = primaryPushWriter(channel.worker, '/nowhere');
  const waiting = writer.write('k', noItems);
  channel.close();
  await assert.rejects(waiting, StoreClosedError);
  await assert.rejects(writer.write('k', noItems), StoreClosedError);
});

test(`a worker keeps at most ${MAX_WAITING_PUSH_WRITES} writes waiting for the primary; beyond, the store is overloaded`, async () => {
  const channel = linkedChannels();
  servePushWrites(channel.primary, { write: () => new Promise<never>(() => {}) });
  const writer = primaryPushWriter(channel.worker, '/nowhere');
  for (let i = 0; i < MAX_WAITING_PUSH_WRITES; i += 1) void writer.write('k', noItems).catch(() => {});
  await assert.rejects(writer.write('k', noItems), StoreOverloadedError);
  channel.close();
});
