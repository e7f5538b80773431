// "Mail arrives exactly once, or its sender is told why" on the relay path: a body the pinned relay
// could never take is refused at send; a row the relay refuses for good ends rejected with an alert
// when the LAN cannot carry it either; relayed mail to an agent the receiver does not have comes back
// as a bounce that lands in the sender's inbox and ends its row rejected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { listInbox } from '../../../src/host/mailbox.ts';
import { messageStatus } from '../../../src/host/core/receipts.ts';
import { applyBounce, BOUNCES_PER_PEER_PER_HOUR, isBouncedReason, queueBounce } from '../../../src/host/core/bounce.ts';
import { LanTransport } from '../../../src/host/transport/lan/client.ts';
import { queueOutgoing, sendMail } from '../../../src/host/send.ts';
import { newUlid } from '../../../src/protocol/ulid.ts';
import { sha256Hex } from '../../../src/protocol/hash.ts';
import { RouteError } from '../../../src/host/core/route.ts';
import type { HostNode } from '../../../src/host/core/node.ts';
import type { MessageRow } from '../../../src/host/store/mail-tables.ts';
import { outboxOverview } from '../../../src/host/outbox.ts';
import { setRelay } from '../../../src/host/relay-client/pin.ts';
import { startTestRelay } from '../../helpers/relay-fixture.ts';
import { isFinalRelayRefusal } from '../../../src/host/transport/row-path.ts';
import { UNREACHABLE_RETRY_MAX_MS } from '../../../src/host/relay-client/session.ts';
import { relayWorld, restartRelay, tick, tickUntilRow, type RelayWorld } from './relay-fixtures.ts';

const rowOf = (node: HostNode, id: string) => node.store.outbox.forMessage(id)[0] ?? assert.fail('no row');

function storedCounts(node: HostNode): string {
  return JSON.stringify([node.store.outbox.countsByKindAndState(), node.store.mail.agents().map((a) => listInbox(node, a.name, true).length)]);
}

/** Ticks both hosts (a minute apart, past early backoffs) until `done` holds. */
async function tickBothUntil(world: RelayWorld, done: () => boolean, what: string, maxTicks = 10): Promise<void> {
  for (let i = 0; i < maxTicks && !done(); i++) {
    await tick(world.a);
    await tick(world.b);
    world.clock.now += 60_000;
  }
  assert.ok(done(), `${what}; a: ${world.a.log.join(' | ')}; b: ${world.b.log.join(' | ')}`);
}

test("send refuses up front a body whose sealed copy is over the relay's max_item_bytes, and stores nothing", async () => {
  const world = await relayWorld({ limits: { max_item_bytes: 16 * 1024 } });
  await tick(world.a); // info tells the limit
  assert.equal(world.a.node.store.relay.get()?.max_item_bytes, 16 * 1024);
  const before = storedCounts(world.a.node);
  assert.throws(
    () => sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'big', body: 'x'.repeat(10_000) }),
    (err: unknown) =>
      err instanceof RouteError &&
      /over the relay's limit of 16384 bytes \(max_item_bytes\), and beta is not known up on the LAN, never seen there: send a body of at most about \d+ bytes/.test(
        err.message,
      ),
  );
  assert.equal(storedCounts(world.a.node), before, 'nothing stored');
  // the body the message names does fit
  const fits = Number(
    /at most about (\d+) bytes/.exec(
      (() => {
        try {
          sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'big', body: 'x'.repeat(10_000) });
        } catch (err) {
          return (err as Error).message;
        }
        return '';
      })(),
    )?.[1],
  );
  assert.ok(fits > 5000 && fits < 10_000, `fits ${fits}`);
  sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'fits', body: 'x'.repeat(fits) });
  // A host known up on the LAN still gets the large copy, over the LAN only.
  world.a.node.store.peers.noteReachable('beta', world.clock.now);
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'big, LAN', body: 'x'.repeat(10_000) });
  assert.match(rowOf(world.a.node, id).relay_refused ?? '', /^too large for the relay \(\d+ bytes, max_item_bytes 16384\): LAN only$/);
});

test('a row the relay refuses for good ends rejected with an alert when the LAN cannot carry it either', async () => {
  const world = await relayWorld({ limits: { max_item_bytes: 8 * 1024 } });
  await tick(world.b); // beta enrols
  // Sent before alpha ever asked the relay for its limits: send assumed the default and queued it.
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'too big for this relay', body: 'y'.repeat(6000) });
  await tickUntilRow(world, world.a, id, 'rejected');
  const row = rowOf(world.a.node, id);
  assert.match(row.last_error ?? '', /rejected:item over size limit.*cannot be reached on the LAN/);
  assert.equal(row.relay_accepted_at, null);
  const alerts = listInbox(world.a.node, 'ann').filter((m) => m.kind === 'alert');
  assert.deepEqual(
    alerts.map((m) => m.subject),
    ['Undeliverable to beta: too big for this relay'],
  );
  assert.match(alerts[0]?.body ?? '', /item over size limit/);
  assert.equal(messageStatus(world.a.node, id)?.recipients[0]?.state, 'rejected');
});

test('a passing refusal (target not enrolled) keeps the row queued for the relay', async () => {
  const world = await relayWorld();
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'early', body: 'x' });
  for (let i = 0; i < 4; i++) {
    await tick(world.a);
    world.clock.now = rowOf(world.a.node, id).next_at;
  }
  assert.equal(rowOf(world.a.node, id).state, 'queued');
  assert.equal(rowOf(world.a.node, id).relay_refused, null);
});

test("relayed mail to an unknown agent comes back as a bounce: in the sender's inbox, its row rejected, never bounced twice", async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['zed@beta'], subject: 'to nobody', body: 'hello zed' });
  await tickUntilRow(world, a, id, 'relay-accepted');
  await tickBothUntil(world, () => rowOf(a.node, id).state === 'rejected', 'the row never ended rejected');
  assert.equal(b.node.store.relay.quarantineCount(), 1, 'the receiver keeps the refused item');
  const bounces = listInbox(a.node, 'ann').filter((m) => m.kind === 'alert');
  assert.equal(bounces.length, 1);
  const bounce = bounces[0] ?? assert.fail('no bounce');
  assert.equal(bounce.from_addr, 'mbx@beta');
  assert.equal(bounce.subject, 'Undeliverable: to nobody');
  assert.equal(bounce.reply_to, id);
  assert.equal(bounce.thread, id, "the bounce stays in the refused message's thread");
  assert.match(bounce.body, /refused message .*unknown recipient zed@beta/);
  assert.match(rowOf(a.node, id).last_error ?? '', /^bounced by beta: beta refused message/);
  const bounceWire = JSON.parse(a.node.store.mail.message(bounce.id)?.wire ?? '{}') as { refs?: unknown };
  assert.deepEqual(bounceWire.refs, [id, `wire-sha256:${sha256Hex(Buffer.from(rowOf(a.node, id).wire, 'utf8'))}`], 'it names the very copy refused');
  assert.equal(messageStatus(a.node, id)?.recipients[0]?.state, 'rejected');
  // The refused item seen again (pulled once more after an epoch change) bounces no second time.
  const quarantined = b.node.store.relay.quarantined()[0] ?? assert.fail('no quarantined item');
  const refused = Buffer.from(quarantined.wire_b64, 'base64');
  const bounceRows = (): number =>
    b.node.store.outbox.countByState('queued', 'envelope') +
    b.node.store.outbox.countByState('relay-accepted', 'envelope') +
    b.node.store.outbox.countByState('settled', 'envelope') +
    b.node.store.outbox.countByState('handed-over', 'envelope');
  const rowsBefore = bounceRows();
  assert.equal(rowsBefore, 1);
  assert.equal(
    b.node.store.transaction(() => queueBounce(b.node, refused, 'alpha', quarantined.reason)),
    false,
  );
  assert.equal(bounceRows(), rowsBefore);
});

test('bounces to one peer are capped per hour: a peer inventing mail to nobody gets no more than the cap', async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  const { id } = sendMail(a.node, { from: 'ann', to: ['zed@beta'], subject: 'to nobody', body: 'x' });
  await tickUntilRow(world, a, id, 'relay-accepted');
  // beta has already bounced the cap's worth to alpha this hour
  for (let i = 0; i < BOUNCES_PER_PEER_PER_HOUR - 1; i++) {
    const filler = newUlid(world.clock.now);
    queueOutgoing(
      b.node,
      { id: filler, from: 'mbx@beta', to: ['ann@alpha'], thread: filler, reply_to: null, kind: 'alert', subject: 'Undeliverable: x', body: 'b', refs: [] },
      [],
      ['alpha'],
    );
  }
  const capped = await relayWorldPull(world);
  assert.equal(capped, 1, 'the last bounce under the cap was queued');
  const { id: second } = sendMail(a.node, { from: 'ann', to: ['zed@beta'], subject: 'again', body: 'y' });
  await tickUntilRow(world, a, second, 'relay-accepted');
  assert.equal(await relayWorldPull(world), 0, 'over the cap: no bounce');
  assert.equal(b.node.store.relay.quarantineCount(), 2, 'both refusals are kept all the same');
  world.clock.now += 60 * 60 * 1000;
  const { id: third } = sendMail(a.node, { from: 'ann', to: ['zed@beta'], subject: 'an hour later', body: 'z' });
  await tickUntilRow(world, a, third, 'relay-accepted');
  assert.equal(await relayWorldPull(world), 1, 'an hour later bounces go again');
});

/** Beta pulls; returns how many bounces (envelopes from beta's mbx) it queued in that pull. */
async function relayWorldPull(world: RelayWorld): Promise<number> {
  const countBounces = (): number => world.b.node.store.outbox.countSentBy('mbx@beta', 'alpha', 0);
  const before = countBounces();
  await world.b.link.prepare(new LanTransport(world.b.node));
  await world.b.link.pull();
  return countBounces() - before;
}

test('only refusals a sender can act on are bounced, and a bounce is never bounced', async () => {
  assert.ok(isBouncedReason('unknown recipient zed@beta'));
  assert.ok(isBouncedReason('cannot open the sealed body'));
  for (const reason of [
    'no recipient on this host',
    'bad signature',
    'sender is not a paired host',
    'envelope is not from the sending host',
    'bad envelope: bad id',
  ]) {
    assert.equal(isBouncedReason(reason), false, reason);
  }
  const world = await relayWorld();
  const { a, b } = world;
  await tick(b);
  // alpha's own mbx writes to an agent beta does not have: beta refuses it and sends nothing back.
  queueOutgoing(
    a.node,
    {
      id: newUlid(world.clock.now),
      from: 'mbx@alpha',
      to: ['zed@beta'],
      thread: 't',
      reply_to: null,
      kind: 'alert',
      subject: 'Undeliverable: x',
      body: 'b',
      refs: [],
    },
    [],
    ['beta'],
  );
  await tickBothUntil(world, () => b.node.store.relay.quarantineCount() === 1, 'beta never refused the alert');
  await tick(b);
  assert.equal(b.node.store.outbox.countByState('queued', 'envelope'), 0, 'no bounce of a bounce');
});

test('a relay that stops answering: status and the log say unreachable with the cause, once, and ready again once it is back', async () => {
  const world = await relayWorld();
  const { a } = world;
  await tick(a);
  assert.equal(a.node.store.relay.get()?.state, 'ok');
  await world.relay.stop();
  for (let i = 0; i < 4; i++) {
    await tick(a);
    world.clock.now += 30_000;
  }
  const overview = outboxOverview(a.node).relay ?? assert.fail('no relay');
  assert.equal(overview.state, 'unreachable');
  assert.match(overview.detail ?? '', /cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
  assert.deepEqual(
    a.log.filter((l) => l.startsWith('relay ')).map((l) => l.replace(/:.*/, '')),
    ['relay ready', 'relay unreachable'],
    a.log.join(' | '),
  );
  await restartRelay(world);
  world.clock.now += UNREACHABLE_RETRY_MAX_MS;
  await tick(a);
  await tick(a);
  assert.equal(a.node.store.relay.get()?.state, 'ok');
  assert.deepEqual(
    a.log.filter((l) => l.startsWith('relay ')).map((l) => l.replace(/:.*/, '')),
    ['relay ready', 'relay unreachable', 'relay ready'],
  );
});

test('status names the path each copy took: the relay with its seq', async () => {
  const world = await relayWorld();
  await tick(world.b);
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta', 'ann'], subject: 'which way', body: 'x' });
  await tickUntilRow(world, world.a, id, 'relay-accepted');
  const seq = rowOf(world.a.node, id).relay_seq;
  const recipients = messageStatus(world.a.node, id)?.recipients ?? [];
  assert.deepEqual(
    recipients.map((r) => [r.recipient, r.via]),
    [
      ['ann@alpha', 'local'],
      ['*@beta', `relay seq ${seq}`],
    ],
  );
});

test("a bounce ends only the row that sent the refused bytes: another copy's hash, or no hash, ends nothing", async () => {
  const world = await relayWorld();
  const { a } = world;
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'mine', body: 'x' });
  const row = rowOf(a.node, id);
  const bounceFrom = (): MessageRow => ({
    id: newUlid(world.clock.now),
    direction: 'in' as const,
    from_addr: 'mbx@beta',
    sender_host: 'beta',
    to_json: '["ann@alpha"]',
    thread: id,
    reply_to: id,
    kind: 'alert',
    subject: 'Undeliverable: mine',
    body: 'beta refused it',
    ts: new Date(world.clock.now).toISOString(),
    wire: null,
    meta_json: null,
    created_at: world.clock.now,
    needs_reply: 0,
    refs_json: '[]',
  });
  /** how many rows the bounce ended, applied as receive applies it: inside the transaction storing it */
  const ended = (msg: MessageRow, refs: string[]): number => a.node.store.transaction(() => applyBounce(a.node, msg, refs));
  assert.equal(ended(bounceFrom(), [id]), 0, 'no wire hash: not a bounce of ours');
  assert.equal(ended(bounceFrom(), [id, `wire-sha256:${sha256Hex('other bytes')}`]), 0);
  assert.equal(rowOf(a.node, id).state, 'queued');
  const ours = `wire-sha256:${sha256Hex(Buffer.from(row.wire, 'utf8'))}`;
  assert.equal(ended({ ...bounceFrom(), from_addr: 'ann2@beta' }, [id, ours]), 0, "only from the host's mbx");
  assert.equal(ended({ ...bounceFrom(), from_addr: 'mbx@gamma', sender_host: 'gamma' }, [id, ours]), 0, "only the bounced host's row");
  assert.equal(ended(bounceFrom(), [id, ours]), 1);
  assert.equal(rowOf(a.node, id).state, 'rejected');
});

test('which relay refusals are final for the relay path', () => {
  for (const status of ['rejected:item over size limit', 'rejected:bad envelope: bad meta.mentions', 'rejected:conflict', 'rejected:bad wire']) {
    assert.ok(isFinalRelayRefusal(status), status);
  }
  for (const status of [
    'rejected:rate',
    'rejected:quota:queue_items',
    'rejected:target not enrolled',
    'rejected:sender not accepted by target',
    'rejected:some reason from a newer relay',
    'rejected:conflicting',
    'accepted',
  ]) {
    assert.equal(isFinalRelayRefusal(status), false, status);
  }
});

test('pinning another relay lets rows the old one refused for good go to the relay again', async () => {
  const world = await relayWorld();
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'refused there', body: 'x' });
  world.a.node.store.outbox.refuseOnRelay(rowOf(world.a.node, id).id, 'relay: rejected:item over size limit', world.clock.now);
  await setRelay(world.a.node, world.relay.url);
  assert.notEqual(rowOf(world.a.node, id).relay_refused, null, 'the same relay again: still refused');
  const other = await startTestRelay({ clock: world.clock });
  await setRelay(world.a.node, other.url);
  assert.equal(rowOf(world.a.node, id).relay_refused, null);
  await other.stop();
});
