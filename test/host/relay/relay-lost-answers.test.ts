// Lost answers with a real relay child process killed at its own crash points: a push committed
// whose answer is lost is retried with the same bytes and comes back a duplicate with the same seq
// (window 1); an ack that got no answer is covered by the next one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { listInbox } from '../../../src/host/mailbox.ts';
import { sendMail } from '../../../src/host/send.ts';
import { setRelay } from '../../../src/host/relay-client/pin.ts';
import { relayApiFor } from '../../../src/host/relay-client/session.ts';
import { isPlainObject } from '../../../src/protocol/validate.ts';
import { tempDir } from '../../helpers/processes.ts';
import { spawnRelay, type RelayProcess } from '../../helpers/relay-process.ts';
import { makeHost, pin } from '../fixtures.ts';
import { CLOSED_ADDR, relayed, tick, type RelayedHost } from './relay-fixtures.ts';
import { TestClock } from '../../helpers/clock.ts';

/** Hosts on the wall clock (the relay child runs on it), both pointed at `relay`. */
async function hostsFor(relay: RelayProcess): Promise<{ clock: TestClock; a: RelayedHost; b: RelayedHost }> {
  const clock = new TestClock(Date.now());
  const a = makeHost('alpha', clock, ['ann']);
  const b = makeHost('beta', clock, ['bob']);
  pin(a, b, CLOSED_ADDR);
  pin(b, a, CLOSED_ADDR);
  for (const node of [a, b]) await setRelay(node, relay.url, relay.fingerprint);
  return { clock, a: relayed(a), b: relayed(b) };
}

function restartSamePort(dir: string, crashed: RelayProcess): Promise<RelayProcess> {
  return spawnRelay(dir, { args: ['--port', new URL(crashed.url).port] });
}

test('a lost push answer: the row stays queued, and the retry with the same bytes is a duplicate with the same seq', async () => {
  const dir = tempDir('mbx-relay-child-');
  const crashing = await spawnRelay(dir, { failpoint: 'relay.push.after-commit' });
  const { clock, a, b } = await hostsFor(crashing);
  clock.now = Date.now();
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'lost answer', body: 'x' });
  await tick(a); // the LAN fails
  const row = () => a.node.store.outbox.forMessage(id)[0] ?? assert.fail('no row');
  const wire = row().wire;
  clock.now = row().next_at;
  await tick(a); // committed by the relay, which dies before answering
  assert.equal(await crashing.child.exited, 'SIGKILL');
  assert.equal(row().state, 'queued');
  assert.match(row().last_error ?? '', /no answer/);
  await restartSamePort(dir, crashing);
  clock.now = row().next_at;
  const heard: string[] = [];
  await tick(a, (_r, result) => heard.push(result.detail));
  assert.equal(row().state, 'relay-accepted');
  assert.equal(row().wire, wire, 'the same bytes');
  assert.match(heard[0] ?? '', /^relay duplicate seq \d+$/);
  assert.equal(heard[0], `relay duplicate seq ${row().relay_seq}`);
  await tick(b);
  assert.deepEqual(
    listInbox(b.node, 'bob').map((m) => m.id),
    [id],
    'stored once',
  );
  assert.deepEqual(
    b.log.filter((l) => l.startsWith('relay envelope')),
    [`relay envelope ${id} seq ${row().relay_seq}: accepted`],
    'the seq of the first commit',
  );
});

test('an ack without an answer is covered by the next ack', async () => {
  const dir = tempDir('mbx-relay-child-');
  const crashing = await spawnRelay(dir, { failpoint: 'relay.ack.before-commit' });
  const { clock, a, b } = await hostsFor(crashing);
  clock.now = Date.now();
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'ack me', body: 'x' });
  await tick(a);
  clock.now = a.node.store.outbox.forMessage(id)[0]?.next_at ?? assert.fail('no row');
  await tick(a);
  assert.equal(a.node.store.outbox.forMessage(id)[0]?.state, 'relay-accepted');
  await tick(b); // applied and checkpointed; the ack kills the relay before it commits
  assert.equal(await crashing.child.exited, 'SIGKILL');
  assert.ok(
    b.log.some((l) => /^relay unreachable: relay ack got no answer/.test(l)),
    b.log.join(' | '),
  );
  assert.equal(b.node.store.relay.get()?.state, 'unreachable');
  assert.deepEqual(
    listInbox(b.node, 'bob').map((m) => m.id),
    [id],
  );
  const relay = await restartSamePort(dir, crashing);
  // past the short wait before an unreachable relay is probed again
  clock.now = Math.max(Date.now(), b.node.store.relay.get()?.retry_at ?? 0);
  await tick(b);
  assert.ok(
    b.log.some((l) => /^relay acked through \d+$/.test(l)),
    b.log.join(' | '),
  );
  assert.equal(b.log.filter((l) => l.startsWith('relay envelope')).length, 1, 'the item was not applied again');
  const info = await relayApiFor(b.node, relay.url).info();
  const you = isPlainObject(info.body) && isPlainObject(info.body.you) ? info.body.you : {};
  const position = b.node.store.relay.get();
  assert.equal(you.acked_through, b.node.store.relay.receivedThrough(position?.url ?? '', position?.epoch ?? ''));
});

test('a receipt that comes before the retry of a lost push answer settles the row as soon as the retry is accepted', async () => {
  const dir = tempDir('mbx-relay-child-');
  const crashing = await spawnRelay(dir, { failpoint: 'relay.push.after-commit' });
  const { clock, a, b } = await hostsFor(crashing);
  clock.now = Date.now();
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'receipt first', body: 'x' });
  await tick(a);
  const row = () => a.node.store.outbox.forMessage(id)[0] ?? assert.fail('no row');
  clock.now = row().next_at;
  await tick(a);
  assert.equal(await crashing.child.exited, 'SIGKILL');
  await restartSamePort(dir, crashing);
  clock.now = Date.now();
  for (let i = 0; i < 3; i++) {
    await tick(b); // pulls the committed item; its receipt fails on the LAN, then goes to the relay
    clock.now += 10_000;
  }
  clock.now = Math.min(clock.now, row().next_at - 1);
  const waitedUntil = clock.now;
  await tick(a); // the receipt arrives while the row still waits for its retry
  assert.equal(a.node.store.receipts.forMessage(id).length, 1);
  // an item from beta at the relay makes its waiting rows due at once (issue 25): the retry goes
  // without waiting out the backoff, is accepted, and the receipt settles it
  if (row().state !== 'settled') await tick(a);
  assert.equal(clock.now, waitedUntil, 'no backoff waited');
  assert.equal(row().state, 'settled');
});
