// Key rotation across two hosts: the record re-pins the peer, mail sealed to the old enc key or
// signed by the old host key before the rotation still arrives, and a crash mid-rotation finishes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { flushOutbox } from '../../src/host/outbox.ts';
import { listInbox } from '../../src/host/mailbox.ts';
import { messageStatus } from '../../src/host/core/receipts.ts';
import { applyPeerRotation, rotateHost } from '../../src/host/core/rotation.ts';
import { homePaths } from '../../src/host/core/identity.ts';
import { sendMail } from '../../src/host/send.ts';
import { LanTransport } from '../../src/host/transport/lan/client.ts';
import { runCli } from '../helpers/processes.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test('a receiver rotates: mail sealed to its old enc key before the rotation still opens', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const oldB = b.keys.hostKey.publicKey;
  const before = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'before', body: 'sealed to the old key' });
  const rotation = rotateHost(b);
  assert.notEqual(b.keys.hostKey.publicKey, oldB);
  assert.equal(b.keys.retiredEnc.length, 1);
  // The rotation reaches alpha first (no hop needed); alpha re-pins beta.
  await flushOutbox(b, new LanTransport(b));
  const pinned = a.store.peers.get('beta');
  assert.equal(pinned?.host_pubkey, b.keys.hostKey.publicKey);
  assert.equal(pinned?.enc_pub, b.keys.enc.publicKey);
  assert.deepEqual(a.store.peers.retiredKeys('beta'), [oldB]);
  assert.equal(applyPeerRotation(a, rotation), 'current');
  // The envelope sealed before the rotation now arrives and opens with the retired enc key.
  await flushOutbox(a, new LanTransport(a));
  assert.equal(a.store.outbox.forMessage(before.id)[0]?.state, 'handed-over');
  assert.deepEqual(
    listInbox(b, 'bob').map((m) => [m.subject, m.body]),
    [['before', 'sealed to the old key']],
  );
  // New mail is sealed to the new key; beta's receipts, signed by its new key, are accepted.
  const after = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'after', body: 'new key' });
  await flushOutbox(a, new LanTransport(a));
  assert.equal(listInbox(b, 'bob').length, 2);
  await flushOutbox(b, new LanTransport(b));
  assert.equal(messageStatus(a, after.id)?.recipients[0]?.state, 'notified');
});

test('a sender rotates: its envelopes signed by the old key before the rotation are still accepted', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const before = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'old-signed', body: 'x' });
  rotateHost(a);
  // One flush carries the rotation first, then the old-signed envelope under a new-key hop.
  await flushOutbox(a, new LanTransport(a));
  assert.equal(b.store.peers.get('alpha')?.host_pubkey, a.keys.hostKey.publicKey);
  assert.equal(a.store.outbox.forMessage(before.id)[0]?.state, 'handed-over');
  assert.deepEqual(
    listInbox(b, 'bob').map((m) => m.subject),
    ['old-signed'],
  );
  // The receipt travels back to alpha, whose hop check now knows beta signs to its new pin.
  await flushOutbox(b, new LanTransport(b));
  assert.equal(messageStatus(a, before.id)?.recipients[0]?.state, 'notified');
});

test('rotation records are refused unless they rotate the pinned key of a peer', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const rotation = rotateHost(b);
  assert.equal(applyPeerRotation(a, { ...rotation, new_sig: rotation.old_sig }), 'rejected:bad new key signature');
  assert.equal(applyPeerRotation(a, { ...rotation, rec: { ...rotation.rec, host: 'gamma' } }), 'rejected:bad old key signature');
  const second = rotateHost(b);
  assert.equal(applyPeerRotation(a, second), 'rejected:old key is not the pinned key');
  assert.equal(applyPeerRotation(a, rotation), 'rotated');
  assert.equal(applyPeerRotation(a, second), 'rotated');
  assert.equal(a.store.peers.get('beta')?.host_pubkey, b.keys.hostKey.publicKey);
  assert.equal(a.store.peers.retiredKeys('beta').length, 2);
  // Pairing beta again (say, a new identity) forgets the keys the old pin had retired.
  a.store.peers.pin({ ...(a.store.peers.get('beta') ?? assert.fail()) }, clock.now);
  assert.deepEqual(a.store.peers.retiredKeys('beta'), []);
});

test('a rotation killed half way finishes on the next start', async () => {
  const clock = new TestClock();
  const { b } = await pairedHosts(clock);
  const paths = homePaths(b.home);
  const oldKey = readFileSync(paths.hostKey, 'utf8');
  for (const point of ['rotate-after-pending', 'rotate-after-enc', 'rotate-after-host']) {
    const before = readFileSync(paths.hostKey, 'utf8');
    const crashed = await runCli(['host', 'rotate'], { MBX_HOME: b.home, MBX_FAILPOINT: point });
    assert.equal(crashed.code, 'SIGKILL', point);
    assert.ok(existsSync(paths.pendingRotation), `${point}: the pending rotation is left behind`);
    const next = await runCli(['whoami', '--json'], { MBX_HOME: b.home });
    assert.equal(next.code, 0, next.stderr);
    assert.ok(!existsSync(paths.pendingRotation), `${point}: finished on the next start`);
    const pub = (JSON.parse(next.stdout) as { host_pubkey: string }).host_pubkey;
    assert.notEqual(readFileSync(paths.hostKey, 'utf8'), before, `${point}: a new key is installed`);
    assert.equal(b.store.rotations.get(pub)?.origin, 'own');
    assert.equal(
      b.store.outbox.due(Number.MAX_SAFE_INTEGER, 100).filter((r) => r.kind === 'rotation' && r.item_id === `rotation:${pub}`).length,
      1,
      `${point}: queued to the peer once`,
    );
  }
  assert.notEqual(readFileSync(paths.hostKey, 'utf8'), oldKey);
});
