// Transport choice per row (design §10) and the sender allowlist against a real relay: the LAN first,
// the relay after two LAN failures or while the peer's address is known unreachable, a row the relay
// accepted never back to the LAN; pushes from hosts that are not our peers are refused by the relay
// until they become peers (the allowlist is republished when the peers change).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseTransport, LAN_UNREACHABLE_FOR_MS } from '../../../src/host/transport/row-path.ts';
import type { Transport } from '../../../src/host/transport/transport.ts';
import type { OutboxRow } from '../../../src/host/store/outbox-table.ts';
import { isPlainObject } from '../../../src/protocol/validate.ts';
import { envelopeItem, sealedEnvelope } from '../../helpers/relay-fixture.ts';
import { makeHost, pin } from '../fixtures.ts';
import { CLOSED_ADDR, rawHost, relayWorld, tick } from './relay-fixtures.ts';

const named = (name: string): Transport => ({ name, deliver: () => Promise.resolve([]) });

/** A queued envelope row for beta, with `over` changed. */
const row = (over: Partial<OutboxRow>): OutboxRow => ({
  id: 1,
  kind: 'envelope',
  item_id: 'x',
  msg_id: 'x',
  peer_host: 'beta',
  wire: '{}',
  state: 'queued',
  transport: null,
  attempts: 0,
  next_at: 0,
  created_at: 0,
  settled_at: null,
  last_error: null,
  relay_seq: null,
  relay_epoch: null,
  relay_accept: null,
  relay_accepted_at: null,
  relay_refused: null,
  ...over,
});

test('the LAN first, the relay after two LAN failures or while the LAN is known unreachable, never back once accepted', async () => {
  const world = await relayWorld();
  const node = world.a.node;
  const [lan, relay, waiting] = [named('lan'), named('relay'), named('waiting')];
  const peer = node.store.peers.get('beta') ?? assert.fail('no peer');
  const choose = chooseTransport(node, lan, relay, waiting);
  assert.equal(choose(peer, row({})).name, 'lan');
  assert.equal(choose(peer, row({ attempts: 1 })).name, 'lan');
  assert.equal(choose(peer, row({ attempts: 2 })).name, 'relay');
  assert.equal(choose(peer, row({ kind: 'rotation', attempts: 5 })).name, 'lan', 'rotation records are LAN only');
  const unreachable = { ...peer, lan_error_at: world.clock.now - 1, last_ok_at: null };
  assert.equal(choose(unreachable, row({})).name, 'relay', 'a known unreachable address is skipped');
  world.clock.now += LAN_UNREACHABLE_FOR_MS;
  assert.equal(choose(unreachable, row({})).name, 'lan', 'after a while new rows try the LAN again');
  assert.equal(choose({ ...unreachable, last_ok_at: world.clock.now }, row({})).name, 'lan');
  const accepted = row({ relay_accepted_at: 1, relay_epoch: 'e' });
  assert.equal(choose(peer, accepted).name, 'relay');
  assert.equal(chooseTransport(node, lan, null, waiting)(peer, accepted).name, 'waiting', 'a relay-accepted row never goes to the LAN');
  assert.equal(chooseTransport(node, lan, null, waiting)(peer, row({ attempts: 9 })).name, 'lan', 'no relay: the LAN keeps trying');
});

test('a row the relay refused for good goes over the LAN while the peer may be reachable there, else it ends rejected', async () => {
  const world = await relayWorld();
  const node = world.a.node;
  const [lan, relay, waiting] = [named('lan'), named('relay'), named('waiting')];
  const peer = node.store.peers.get('beta') ?? assert.fail('no peer');
  const refused = row({ id: 7, attempts: 3, relay_seq: 1, relay_epoch: 'e', relay_accepted_at: 1, relay_refused: 'relay: rejected:item over size limit' });
  const choose = chooseTransport(node, lan, relay, waiting);
  assert.equal(choose(peer, refused).name, 'lan', 'never the relay again, also for a row it once accepted');
  const unreachable = { ...peer, lan_error_at: world.clock.now - 1, last_ok_at: null };
  const ended = choose(unreachable, refused);
  const [result] = await ended.deliver(unreachable, [refused]);
  assert.equal(result?.outcome, 'rejected');
  assert.match(result?.detail ?? '', /item over size limit.*cannot be reached on the LAN/);
});

test('the relay refuses pushes from hosts that are not our peers until they are paired', async () => {
  const world = await relayWorld();
  await tick(world.b);
  const stranger = makeHost('gamma', world.clock, ['gil']);
  const gamma = rawHost(world, stranger);
  assert.equal((await gamma.api.enrol()).status, 200);
  const beta = rawHost(world, world.b.node, { publicKey: world.b.node.keys.enc.publicKey, privateKey: '' });
  const push = async (): Promise<unknown> => {
    const env = sealedEnvelope(gamma, beta, world.clock.now);
    const answer = await gamma.api.push([envelopeItem(env.id, [{ host: beta, wire: env.wire }])]);
    return isPlainObject(answer.body) && Array.isArray(answer.body.results) ? (answer.body.results[0] as Record<string, unknown>).status : null;
  };
  assert.equal(await push(), 'rejected:sender not accepted by target');
  pin(world.b.node, stranger, CLOSED_ADDR);
  world.clock.now += 1000;
  await tick(world.b);
  assert.equal(await push(), 'accepted', 'the allowlist was republished with the new peer');
});
