// Mail both ways through a real relay on 127.0.0.1: LAN unreachable, the row goes to the relay after
// a LAN failure, waits relay-accepted, and settles when the delivery receipt comes back as an item.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { listInbox } from '../../../src/host/mailbox.ts';
import { sendMail } from '../../../src/host/send.ts';
import { relayWorld, tick, tickUntilRow } from './relay-fixtures.ts';

test('a message crosses the relay and its delivery receipt settles the row', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b); // beta's daemon runs: enrolled, enc-ad and allowlist published
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'over the relay', body: 'hello' });
  await tick(a);
  const row = () => a.node.store.outbox.forMessage(id)[0] ?? assert.fail('no row');
  assert.equal(row().state, 'queued');
  assert.equal(row().transport, null, 'the first try is the LAN');
  await tickUntilRow(world, a, id, 'relay-accepted');
  assert.ok(row().relay_seq !== null && row().relay_epoch !== null && row().relay_accept !== null);
  await tick(b);
  assert.deepEqual(
    listInbox(b.node, 'bob').map((m) => m.id),
    [id],
  );
  // beta's receipt goes to alpha over the relay too
  for (let i = 0; i < 4; i++) {
    await tick(b);
    world.clock.now += 60 * 60 * 1000;
  }
  await tick(a);
  assert.equal(row().state, 'settled', `settled by the receipt: ${a.log.join(' | ')} / ${b.log.join(' | ')}`);
});
