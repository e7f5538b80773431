// Our real CLI and daemon against a simulated AgentMBX host written from protocol.md §5
// (test/helpers/agentmbx-peer-sim.ts), over the LAN on 127.0.0.1: pairing in both roles (the sim with
// an owner key and without one), mail both ways settled on both books with receipts applied, key
// rotation both ways, our older answer shape still read, and unpair both ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { startPeerSim, type PeerSim } from '../helpers/agentmbx-peer-sim.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, inboxMessages, newCliHost, startCliDaemon, type CliHost } from './host-helpers.ts';

interface Peer {
  host: string;
  host_pubkey: string;
  enc_key: boolean;
}
interface Status {
  recipients: Array<{ recipient: string; state: string }>;
}
interface Overview {
  outbox: Record<string, Record<string, number>>;
}

/**
 * Every outbox row of ours is handed over (or, for a receipt, superseded by a later one for the same
 * message before it went): nothing queued, rejected or undelivered.
 */
async function allHandedOver(host: CliHost): Promise<void> {
  const { outbox } = await cliJson<Overview>(host, ['status']);
  for (const [kind, states] of Object.entries(outbox)) {
    assert.deepEqual(
      Object.keys(states).filter((s) => s !== 'handed-over' && !(kind === 'receipt' && s === 'superseded')),
      [],
      `${kind} rows: ${JSON.stringify(states)}`,
    );
  }
}

async function ourPeer(host: CliHost, name: string): Promise<Peer | undefined> {
  return (await cliJson<Peer[]>(host, ['peers'])).find((p) => p.host === name);
}

/** Ours → the sim: the row settles on `accepted`, the sim opened it, and the sim's receipt is applied here. */
async function mailToSim(alpha: CliHost, sim: PeerSim, subject: string): Promise<void> {
  const id = (await cli(alpha, ['send', '--from', 'ann', '--to', `sam@${sim.host}`, '--subject', subject, '--body', `body of ${subject}`])).trim();
  await alpha.daemon?.waitForLine(new RegExp(`envelope ${id} -> ${sim.host}: accepted`));
  assert.deepEqual(sim.received.get(id), { from: 'ann@alpha', subject, body: `body of ${subject}` });
  assert.equal(await sim.sendReceipt(id, `sam@${sim.host}`, 'read', 3), 'accepted');
  const status = await cliJson<Status>(alpha, ['status', id]);
  assert.deepEqual(
    status.recipients.map((r) => [r.recipient, r.state]),
    [[`sam@${sim.host}`, 'read']],
  );
}

/** The sim → ours: `{id, result: accepted}`, in ann's inbox once, and our receipts (bare-string answers) reach the sim's book. */
async function mailFromSim(alpha: CliHost, sim: PeerSim, subject: string): Promise<void> {
  const sent = await sim.send('ann@alpha', subject, `body of ${subject}`);
  assert.equal(sent.result, 'accepted');
  const inbox = await inboxMessages<{ id: string; from: string; subject: string }>(alpha, 'ann');
  assert.deepEqual(
    inbox.filter((m) => m.id === sent.id).map((m) => [m.from, m.subject]),
    [[`sam@${sim.host}`, subject]],
  );
  // delivered (1), then notified (2: the inbox listing showed it); both answered with bare strings
  await alpha.daemon?.waitForLine(new RegExp(`receipt receipt:${sent.id}:ann@alpha:2 -> ${sim.host}: accepted`));
  assert.deepEqual(sim.receipts.get(`${sent.id}|ann@alpha`), { state: 'notified', seq: 2 });
}

test('the sim pairs (owner key set), our join pins it; mail, receipts and rotations settle both ways; the sim unpairs', {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const sim = await startPeerSim({ host: 'simhost', ownerPubkey: generateSigningKey().publicKey });
  const alpha = await newCliHost('alpha', ['ann']);
  await startCliDaemon(alpha);
  await cli(alpha, ['join', sim.url, sim.openToken(), '--my-addr', alpha.url]);
  const peer = await ourPeer(alpha, 'simhost');
  assert.deepEqual([peer?.host_pubkey, peer?.enc_key], [sim.key.publicKey, true]);
  const pinned = sim.peers.get('alpha');
  assert.deepEqual([pinned?.addr, pinned?.owner_pubkey], [alpha.url, null], 'we send owner_pubkey null and our address');

  await mailToSim(alpha, sim, 'ours to the sim');
  await mailFromSim(alpha, sim, 'the sim to ours');

  // our rotation: the sim answers the bare string `rotated` and our row settles on it
  const rotated = await cliJson<{ new_pub: string }>(alpha, ['host', 'rotate']);
  await alpha.daemon?.waitForLine(/rotation rotation:\S+ -> simhost: rotated/);
  assert.equal(sim.peers.get('alpha')?.host_pubkey, rotated.new_pub);
  // the sim's rotation: ours answers `rotated`, re-pins, and takes mail signed with the new key
  assert.deepEqual(await sim.rotate(), { alpha: 'rotated' });
  assert.equal((await ourPeer(alpha, 'simhost'))?.host_pubkey, sim.key.publicKey);
  await mailFromSim(alpha, sim, "signed with the sim's new key");
  await allHandedOver(alpha);

  assert.equal(await sim.unpair('alpha'), 200);
  await alpha.daemon?.waitForLine(/simhost unpaired from this host/);
  assert.equal(await ourPeer(alpha, 'simhost'), undefined);
  const alerts = await inboxMessages<{ from: string; subject: string }>(alpha, 'owner');
  assert.deepEqual(
    alerts.map((m) => [m.from, m.subject]),
    [['mbx@alpha', 'simhost unpaired from this host']],
  );
});

test('our pair, the sim joins (no owner key); our older answer shape is still read; peers remove tells the sim', { timeout: E2E_TIMEOUT_MS }, async () => {
  const sim = await startPeerSim({ host: 'simhost' });
  const alpha = await newCliHost('alpha', ['ann']);
  await startCliDaemon(alpha);
  const { token } = await cliJson<{ token: string }>(alpha, ['pair']);
  await sim.join(alpha.url, token);
  assert.equal(sim.peers.get('alpha')?.owner_pubkey, null, 'our hello names no owner key');
  assert.equal((await ourPeer(alpha, 'simhost'))?.host_pubkey, sim.key.publicKey);
  // §5's join carries no enc key: our daemon fetches the sim's signed one after pairing
  while ((await ourPeer(alpha, 'simhost'))?.enc_key !== true)
    await new Promise((resolve) => {
      setTimeout(resolve, 100);
    });

  // the sim answers as older builds of ours did: {id, status} on every route
  sim.oldShapes = true;
  const id = (await cli(alpha, ['send', '--from', 'ann', '--to', 'sam@simhost', '--subject', 'old shape', '--body', 'b'])).trim();
  await alpha.daemon?.waitForLine(new RegExp(`envelope ${id} -> simhost: accepted`));
  await cli(alpha, ['host', 'rotate']);
  await alpha.daemon?.waitForLine(/rotation rotation:\S+ -> simhost: accepted/);
  sim.oldShapes = false;
  await allHandedOver(alpha);

  const removed = await cliJson<{ removed: string; peer_told: boolean }>(alpha, ['peers', 'remove', 'simhost']);
  assert.deepEqual([removed.removed, removed.peer_told], ['simhost', true]);
  assert.equal(sim.peers.get('alpha'), undefined, 'the sim was told');
  assert.equal(await ourPeer(alpha, 'simhost'), undefined);
});
