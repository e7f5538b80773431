// The daemon with a dead LAN path: a peer whose LAN call hangs holds back neither another peer nor
// the relay pull; a LAN attempt a stop cut short counts as failed in the next daemon; a delivery
// whose call gets no answer makes one call, not one per batch; failed attempts are counted.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { startDaemon, type RunningDaemon } from '../../src/host/daemon.ts';
import { FailureTally, FAILURE_SUMMARY_MS, FAILURE_TALLY_MAX } from '../../src/host/failure-tally.ts';
import { listInbox } from '../../src/host/mailbox.ts';
import type { HostNode } from '../../src/host/core/node.ts';
import { sendMail } from '../../src/host/send.ts';
import { LanTransport } from '../../src/host/transport/lan/client.ts';
import { peerLanUnreachable } from '../../src/host/transport/row-path.ts';
import { waitUntil } from '../helpers/wait.ts';
import { makeHost, pin, serveLan } from './fixtures.ts';
import { CLOSED_ADDR, relayWorld, tick, tickUntilRow } from './relay/relay-fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

const HOUR = 3_600_000;
/** Longest wait for something a healthy run does within a tick or two. */
const DEADLINE_MS = 10_000;

/** A TCP server that takes connections and, as `answer` says, holds them open unanswered or cuts them at once. */
async function deadPeer(answer: 'hang' | 'cut'): Promise<{ url: string; connections(): number; open(): number; release(): void }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    if (answer === 'cut') {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const release = (): void => {
    for (const s of sockets) s.destroy();
  };
  after(() => {
    release();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    open: () => sockets.size,
    release,
  };
}

async function daemon(node: HostNode, log: string[]): Promise<RunningDaemon> {
  // An hour between ticks: only the first tick, explicit ticks and wake-ups run here.
  return startDaemon(node, { port: 0, bind: '127.0.0.1', tickMs: HOUR, log: (line) => log.push(line) });
}

test('a peer whose LAN call hangs holds back neither another peer nor the relay pull', { timeout: 60_000 }, async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(a);
  await tick(b);
  const gamma = makeHost('gamma', world.clock, ['cy']);
  pin(a.node, gamma, await serveLan(gamma));
  pin(gamma, a.node, CLOSED_ADDR);
  const hanging = await deadPeer('hang');
  pin(a.node, b.node, hanging.url);
  const toBob = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'stuck on the LAN', body: 'y' });
  const log: string[] = [];
  const d = await daemon(a.node, log);
  await waitUntil('the LAN call to beta hangs', DEADLINE_MS, async () => (hanging.open() === 1 ? null : `${hanging.open()} open`));

  // While it hangs: mail for another peer, and mail waiting on the relay, move on the next tick.
  sendMail(a.node, { from: 'ann', to: ['cy@gamma'], subject: 'over a LAN that answers', body: 'z' });
  const fromBob = sendMail(b.node, { from: 'bob', to: ['ann@alpha'], subject: 'via the relay', body: 'x' });
  await tickUntilRow(world, b, fromBob.id, 'relay-accepted');
  void d.tick();
  await waitUntil('cy has her mail', DEADLINE_MS, async () => (listInbox(gamma, 'cy').length === 1 ? null : 'not yet'));
  await waitUntil('ann has the relay mail', DEADLINE_MS, async () => (listInbox(a.node, 'ann').length === 1 ? null : log.join(' | ')));
  assert.equal(hanging.open(), 1, 'the LAN call to beta is still waiting for its answer');
  assert.equal(a.node.store.outbox.forMessage(toBob.id)[0]?.state, 'queued');
  assert.notEqual(a.node.store.peers.get('beta')?.lan_attempt_at, null, 'the open attempt is on record');
  hanging.release();
  await d.stop();
  assert.equal(a.node.store.peers.get('beta')?.lan_attempt_at, null, 'the attempt ended with its failure');
});

test('a LAN attempt cut short by a stop counts as failed: the next daemon sends the rows to the relay', { timeout: 60_000 }, async () => {
  const world = await relayWorld();
  const { a, b } = world;
  await tick(a);
  await tick(b);
  const hanging = await deadPeer('hang');
  pin(a.node, b.node, hanging.url);
  const { id } = sendMail(a.node, { from: 'ann', to: ['bob@beta'], subject: 'after a crash', body: 'x' });
  // What a daemon killed inside its LAN call leaves behind.
  const startedAt = world.clock.now;
  a.node.store.peers.noteAttempt('beta', startedAt);

  const log: string[] = [];
  const d = await daemon(a.node, log);
  await d.tick();
  await d.stop();
  assert.equal(a.node.store.outbox.forMessage(id)[0]?.state, 'relay-accepted', log.join(' | '));
  assert.equal(hanging.connections(), 0, 'no LAN call to a peer whose last attempt never ended');
  const peer = a.node.store.peers.get('beta') ?? assert.fail('beta is gone');
  assert.equal(peer.lan_error_at, startedAt);
  assert.equal(peer.lan_attempt_at, null);
  assert.ok(peerLanUnreachable(peer, world.clock.now));
  assert.ok(
    log.some((l) => l === 'LAN attempts cut short by the last stop count as failed: beta'),
    log.join(' | '),
  );
});

test('a delivery whose LAN call gets no answer fails every batch with one call', async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann']);
  const b = makeHost('beta', clock, ['bob']);
  const cut = await deadPeer('cut');
  pin(a, b, cut.url);
  for (const kind of ['envelope', 'receipt'] as const) {
    a.store.outbox.enqueue({ kind, item_id: `${kind}-1`, msg_id: null, peer_host: 'beta', wire: '{}' }, clock.now);
  }
  const rows = a.store.outbox.due(clock.now, 10);
  const results = await new LanTransport(a).deliver(a.store.peers.get('beta') ?? assert.fail(), rows);
  assert.deepEqual(
    results.map((r) => r.outcome),
    ['failed', 'failed'],
  );
  assert.equal(results[0]?.detail, results[1]?.detail);
  assert.match(results[0]?.detail ?? '', /^cannot reach http:\/\/127\.0\.0\.1:\d+: /);
  // one connect check and one request; the receipt batch is not tried against the same dead path
  assert.equal(cut.connections(), 2);
  const peer = a.store.peers.get('beta') ?? assert.fail();
  assert.equal(peer.lan_error_at, clock.now);
  assert.equal(peer.lan_attempt_at, null);
});

test('failed attempts are counted per peer and transport and summed up once per window', () => {
  const lines: string[] = [];
  const tally = new FailureTally((line) => lines.push(line), 0);
  tally.note('beta', 'lan', 'no TCP connect');
  tally.note('beta', 'lan', 'ECONNREFUSED');
  tally.note('beta', 'relay', 'relay not usable');
  tally.summarize(FAILURE_SUMMARY_MS - 1);
  assert.deepEqual(lines, [], 'not before the window is over');
  tally.summarize(FAILURE_SUMMARY_MS);
  assert.deepEqual(lines, [
    'failed attempts: 2 to beta over lan in the last 60 s; last error: ECONNREFUSED',
    'failed attempts: 1 to beta over relay in the last 60 s; last error: relay not usable',
  ]);
  lines.length = 0;
  for (let i = 0; i <= FAILURE_TALLY_MAX; i++) tally.note(`host${i}`, 'lan', 'x');
  tally.summarize(FAILURE_SUMMARY_MS + 1, true);
  assert.equal(lines.length, FAILURE_TALLY_MAX + 1, 'one line per counted pair, one for the rest');
  assert.equal(lines.at(-1), 'failed attempts: 1 to other peers in the last 1 s; last error: x');
});
