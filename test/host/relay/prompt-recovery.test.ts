// Prompt recovery (issue 25), on an injected clock: a path that works again makes the waiting rows due
// at once instead of after their backoff: the relay answering again (every row), an item a peer
// pushed through the relay (that peer's rows), and the peer's LAN answering again (its rows). Each
// test holds the clock short of the row's backoff and sees it go in the same tick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flushOutbox } from '../../../src/host/outbox.ts';
import { sendMail } from '../../../src/host/send.ts';
import { LanTransport } from '../../../src/host/transport/lan/client.ts';
import { UNREACHABLE_RETRY_MAX_MS } from '../../../src/host/relay-client/session.ts';
import type { HostNode } from '../../../src/host/core/node.ts';
import { TestClock } from '../../helpers/clock.ts';
import { pairedHosts } from '../fixtures.ts';
import { relayWorld, restartRelay, tick } from './relay-fixtures.ts';

/** How far in the future a row's backoff puts it: much longer than any step these tests take. */
const LONG_BACKOFF_MS = 50 * 60_000;

function rowOf(node: HostNode, id: string) {
  return node.store.outbox.forMessage(id)[0] ?? assert.fail(`no row for ${id}`);
}

/** Backs the message's row off as a failed attempt does, `LONG_BACKOFF_MS` ahead of the clock. */
function backOff(node: HostNode, id: string): void {
  node.store.outbox.retryLater(rowOf(node, id).id, 'cannot reach', node.nowMs() + LONG_BACKOFF_MS);
}

test('the relay answering again makes every waiting row due at once', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(a);
  await tick(b);
  await world.relay.stop();
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'while the relay is down', body: 'x' });
  await tick(a);
  assert.equal(a.node.store.relay.get()?.state, 'unreachable');
  backOff(a.node, id);
  await restartRelay(world);
  world.clock.now += UNREACHABLE_RETRY_MAX_MS; // the relay's own retry time, far short of the row's backoff
  assert.ok(rowOf(a.node, id).next_at > world.clock.now + 10 * 60_000);
  await tick(a);
  await tick(a); // a tick that found the session and rows in flight: the next one sees them settle
  assert.equal(rowOf(a.node, id).state, 'relay-accepted', a.log.join(' | '));
});

test("an item a peer pushed through the relay makes that peer's waiting rows due at once", async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(a);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'to a peer not enrolled yet', body: 'x' });
  // its LAN failed and the relay refused it (beta not enrolled): it waits out a long backoff
  a.node.store.peers.noteError('beta', 'cannot reach', world.clock.now);
  backOff(a.node, id);
  await tick(b); // beta enrols now
  const hello = sendMail(b.node, { from: 'bob', to: ['ann@alpha'], subject: 'beta is here', body: 'y' });
  // beta's own row tries the (closed) LAN first, then the relay after a short backoff
  for (let i = 0; i < 4 && rowOf(b.node, hello.id).state !== 'relay-accepted'; i++) {
    await tick(b);
    world.clock.now += 10_000;
  }
  assert.equal(rowOf(b.node, hello.id).state, 'relay-accepted', b.log.join(' | '));
  await tick(a); // alpha pulls beta's item: beta is enrolled
  await tick(a);
  assert.equal(rowOf(a.node, id).state, 'relay-accepted', a.log.join(' | '));
  assert.ok(world.clock.now < rowOf(a.node, id).created_at + LONG_BACKOFF_MS);
});

test("the peer's LAN answering again makes its waiting rows due at once", async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  const lan = new LanTransport(a);
  const waiting = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'backed off', body: 'x' });
  backOff(a, waiting.id);
  const fresh = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'goes now', body: 'y' });
  assert.equal(await flushOutbox(a, lan), 1, 'only the fresh row is due');
  assert.equal(rowOf(a, fresh.id).state, 'handed-over');
  assert.equal(rowOf(a, waiting.id).next_at, clock.now, 'beta answered: its waiting row is due now');
  assert.equal(await flushOutbox(a, lan), 1);
  assert.equal(rowOf(a, waiting.id).state, 'handed-over');
});
