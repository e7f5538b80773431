// The directory through a relay, with the LAN cut: directory mail between the hosts' `mbx`, sealed
// like any mail, applied on receipt and shown in no inbox, settled by its receipt; sent only to a
// peer that named the feature, only once the LAN has not carried the directory for a while, then
// on a change and hourly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureAgent } from '../../../src/host/agent-mail.ts';
import { directory } from '../../../src/host/directory/directory.ts';
import { DIRECTORY_MAIL_AFTER_MS, DIRECTORY_MAIL_EVERY_MS, DIRECTORY_MAIL_GAP_MS } from '../../../src/host/directory/mail.ts';
import { peerFeatures } from '../../../src/host/directory/peer-features.ts';
import { DIRECTORY_MAIL_FEATURE } from '../../../src/host/directory/wire.ts';
import { listInbox } from '../../../src/host/mailbox.ts';
import type { HostNode } from '../../../src/host/core/node.ts';
import { serveLan } from '../fixtures.ts';
import { CLOSED_ADDR, relayWorld, tick, tickUntilRow } from './relay-fixtures.ts';

/** The directory mail rows `node` queued: [state] per row, oldest first. */
function directoryRows(node: HostNode): string[] {
  return node.store.db
    .all<{ state: string }>(
      `SELECT o.state FROM outbox o JOIN messages m ON m.id = o.msg_id WHERE m.from_addr = ? AND o.kind = 'envelope' ORDER BY o.id`,
      `mbx@${node.config.host}`,
    )
    .map((r) => r.state);
}

const peerAgents = (node: HostNode): string[] =>
  directory(node)
    .filter((e) => e.where === 'peer')
    .map((e) => e.address);

test('with the LAN cut, a fresh agent reaches the peer as directory mail through the relay: applied, in no inbox, settled', { timeout: 60_000 }, async () => {
  const world = await relayWorld();
  const { a, b, clock } = world;
  // Paired on the LAN: each side reads the other's status (its features) and directory.
  a.node.store.peerLinks.moveAddr('beta', await serveLan(b.node));
  b.node.store.peerLinks.moveAddr('alpha', await serveLan(a.node));
  await tick(a);
  await tick(b);
  assert.ok(peerFeatures(b.node, 'alpha').includes(DIRECTORY_MAIL_FEATURE));
  assert.deepEqual(peerAgents(a.node), ['bob@beta']);
  // alpha's view of beta as an AgentMBX host would be: no feature, so alpha never mails it a directory.
  a.node.store.peerLinks.setFeatures('beta', [], clock.now);

  a.node.store.peerLinks.moveAddr('beta', CLOSED_ADDR);
  b.node.store.peerLinks.moveAddr('alpha', CLOSED_ADDR);
  ensureAgent(b.node, 'carl', { role: 'tester', description: 'runs the tests' });
  await tick(b);
  assert.deepEqual(directoryRows(b.node), [], 'the LAN carried the directory moments ago: no mail yet');

  clock.advance(DIRECTORY_MAIL_AFTER_MS);
  await tick(a);
  assert.deepEqual(directoryRows(a.node), [], 'never sent to a peer that did not name the feature');
  await tick(b);
  assert.ok(b.log.includes('directory mail queued for alpha'), b.log.join(' | '));
  const sent = b.node.store.db.get<{ id: string }>("SELECT id FROM messages WHERE from_addr = 'mbx@beta'")?.id ?? assert.fail('no directory mail');
  await tickUntilRow(world, b, sent, 'relay-accepted');
  await tick(a);
  assert.deepEqual(peerAgents(a.node), ['bob@beta', 'carl@beta']);
  const carl = directory(a.node).find((e) => e.address === 'carl@beta');
  assert.equal(carl?.description, 'runs the tests');
  assert.deepEqual(listInbox(a.node, 'ann'), [], 'no agent sees it');
  assert.deepEqual(listInbox(a.node, 'owner'), []);
  assert.equal(a.node.store.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM messages WHERE direction = 'in'")?.n, 0, 'not stored as mail');
  assert.deepEqual(a.node.store.relay.quarantined(), []);
  // alpha's receipt from its mbx (after the LAN failures that send it to the relay) settles beta's row.
  for (let i = 0; i < 6 && directoryRows(b.node)[0] !== 'settled'; i++) {
    clock.advance(60_000);
    await tick(a);
    await tick(b);
  }
  assert.deepEqual(directoryRows(b.node), ['settled'], b.log.join(' | '));

  // Unchanged: not again within the hour; a change goes after the minute's gap.
  clock.advance(DIRECTORY_MAIL_GAP_MS);
  await tick(b);
  assert.deepEqual(directoryRows(b.node), ['settled']);
  ensureAgent(b.node, 'dee');
  await tick(b);
  assert.equal(directoryRows(b.node).length, 2);
  clock.advance(DIRECTORY_MAIL_EVERY_MS);
  await tick(b);
  assert.equal(directoryRows(b.node).length, 3);
  await tick(a);
  assert.deepEqual(peerAgents(a.node), ['bob@beta', 'carl@beta', 'dee@beta']);
  // beta's directory mail told alpha that beta applies it: alpha's own goes out now.
  assert.ok(peerFeatures(a.node, 'beta').includes(DIRECTORY_MAIL_FEATURE));
  assert.notDeepEqual(directoryRows(a.node), []);
});
