// Host key rotation (T030). The new keys and the signed record are written to a pending file
// first; finishing is idempotent (retire the old keys, install the new ones, record the rotation
// and queue it to every peer, drop the pending file), so a crash anywhere finishes on next start.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { encPublicFromPrivate, generateEncKeyPair, generateSigningKey, signingKeyFromSeed } from '../../protocol/keys.ts';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { checkRotation, rotationItemId, signRotation, type HostRotation } from '../../protocol/records/rotation.ts';
import { failPoint } from '../../failpoint.ts';
import { HomeError, readPrivateFile, writePrivateFile } from './home-files.ts';
import { homePaths, loadEncKey, loadSigningKey, loadKeys } from './identity.ts';
import type { HostNode } from './node.ts';
import { META_HOST_PUB, type HostStore } from '../store/host-store.ts';
import { retryQuarantined } from './inbound-items.ts';

interface PendingRotation {
  rotation: HostRotation;
  host_seed: string;
  enc_private: string;
}

/** §5's answers to a rotation record: `rotated` (applied now), `current` (already applied), or why not. */
export type RotationResult = 'rotated' | 'current' | `rejected:${string}`;

/** Rotates this host's keys; returns the signed record (already queued to every peer). */
export function rotateHost(node: HostNode): HostRotation {
  const paths = homePaths(node.home);
  if (readPrivateFile(paths.pendingRotation) !== null) throw new HomeError('a rotation is already in progress: run the command again after restarting');
  const newHost = generateSigningKey();
  const newEnc = generateEncKeyPair();
  const rotation = signRotation(
    {
      v: 1,
      type: 'host-rotation',
      host: node.config.host,
      old_pub: node.keys.hostKey.publicKey,
      new_pub: newHost.publicKey,
      new_enc_pub: newEnc.publicKey,
      iat: new Date(node.nowMs()).toISOString(),
    },
    node.keys.hostKey,
    newHost,
  );
  const pending: PendingRotation = { rotation, host_seed: newHost.exportSeed(), enc_private: newEnc.privateKey };
  writePrivateFile(paths.pendingRotation, `${JSON.stringify(pending)}\n`);
  failPoint('rotate-after-pending');
  finishPendingRotation(node.home, node.store, node.nowMs());
  node.keys = loadKeys(node.home);
  return rotation;
}

/** Completes a rotation left by `rotateHost` (no-op when there is none). */
export function finishPendingRotation(home: string, store: HostStore, nowMs: number): void {
  const paths = homePaths(home);
  const text = readPrivateFile(paths.pendingRotation);
  if (text === null) {
    if (store.getMeta(META_HOST_PUB) === undefined) store.setMeta(META_HOST_PUB, loadSigningKey(paths.hostKey).publicKey);
    return;
  }
  const pending = parsePending(text, paths.pendingRotation);
  const { rec } = pending.rotation;
  const stamp = String(Date.parse(rec.iat)).padStart(15, '0');
  const oldEnc = loadEncKey(paths.encKey);
  if (oldEnc.publicKey !== rec.new_enc_pub) {
    // Retired enc keys keep opening mail sealed to them before the rotation.
    writePrivateFile(join(paths.retiredDir, `enc-${stamp}-${fingerprint(rec.old_pub)}.key`), `${oldEnc.privateKey}\n`);
    writePrivateFile(paths.encKey, `${pending.enc_private}\n`);
  }
  failPoint('rotate-after-enc');
  const oldHost = loadSigningKey(paths.hostKey);
  if (oldHost.publicKey !== rec.new_pub) {
    writePrivateFile(join(paths.retiredDir, `host-${stamp}-${fingerprint(rec.old_pub)}.key`), `${oldHost.exportSeed()}\n`);
    writePrivateFile(paths.hostKey, `${pending.host_seed}\n`);
  }
  failPoint('rotate-after-host');
  store.transaction(() => {
    const wire = JSON.stringify(pending.rotation);
    if (store.rotations.insert({ new_pub: rec.new_pub, old_pub: rec.old_pub, host: rec.host, origin: 'own', record: wire, at: nowMs })) {
      for (const peer of store.peers.list()) {
        store.outbox.enqueue({ kind: 'rotation', item_id: rotationItemId(rec), msg_id: null, peer_host: peer.host, wire }, nowMs);
      }
    }
    store.setMeta(META_HOST_PUB, rec.new_pub);
  });
  rmSync(paths.pendingRotation, { force: true });
}

function parsePending(text: string, path: string): PendingRotation {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new HomeError(`${path} is not valid JSON: the rotation cannot be finished`);
  }
  const p = parsed as Partial<PendingRotation> | null;
  const check = checkRotation(p?.rotation);
  const host = typeof p?.host_seed === 'string' ? signingKeyFromSeed(p.host_seed) : null;
  const encPub = typeof p?.enc_private === 'string' ? encPublicFromPrivate(p.enc_private) : null;
  if (!check.ok || host === null || encPub === null || host.publicKey !== check.rotation.rec.new_pub || encPub !== check.rotation.rec.new_enc_pub) {
    throw new HomeError(`${path} is damaged: the rotation cannot be finished`);
  }
  return p as PendingRotation;
}

/** Reloads the keys when another process (the CLI's `host rotate`) installed new ones. */
export function refreshKeys(node: HostNode): void {
  const installed = node.store.getMeta(META_HOST_PUB);
  if (installed !== undefined && installed !== node.keys.hostKey.publicKey) node.keys = loadKeys(node.home);
}

/** Applies a peer's rotation record: re-pin its new keys, keep the old one as retired. */
export function applyPeerRotation(node: HostNode, record: unknown): RotationResult {
  const check = checkRotation(record);
  if (!check.ok) return `rejected:${check.reason}`;
  const { rec } = check.rotation;
  const { store } = node;
  const peer = store.peers.get(rec.host);
  if (peer === undefined) return 'rejected:host is not paired';
  if (peer.host_pubkey === rec.new_pub || store.rotations.get(rec.new_pub) !== undefined) return 'current';
  if (peer.host_pubkey !== rec.old_pub) return 'rejected:old key is not the pinned key';
  const now = node.nowMs();
  store.transaction(() => {
    store.peers.rotate(rec.host, rec.old_pub, rec.new_pub, rec.new_enc_pub, now);
    store.rotations.insert({ new_pub: rec.new_pub, old_pub: rec.old_pub, host: rec.host, origin: 'peer', record: JSON.stringify(check.rotation), at: now });
    store.outbox.makeDueNow(rec.host, now);
  });
  // Relay items the peer pushed under its new key before we knew it were quarantined: take them now.
  retryQuarantined(node, rec.new_pub);
  return 'rotated';
}
