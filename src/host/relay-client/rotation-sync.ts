// Our own key rotation reaching the relay (design §2 "Rotation", §8): the self-proving record moves
// our enrolment and queue to the new key; the receive position starts over (items were re-sequenced)
// and the enc-ad is published again.
import { readRotationAnswer } from '../../protocol/relay-api/rotation.ts';
import type { HostNode } from '../core/node.ts';
import type { RelayApi } from './api.ts';

/**
 * Walks our own rotations from the key the relay last knew us by to the current key, posting each
 * record. Every step that the relay took, or that has nothing to move (ROTATION_UNKNOWN_KEY: the
 * old key was not enrolled there), advances; anything else stops and is tried again next time.
 */
export async function syncOwnRotation(node: HostNode, api: RelayApi): Promise<void> {
  const { store } = node;
  const current = node.keys.hostKey.publicKey;
  let known = store.relay.get()?.session_host_pubkey ?? null;
  if (known === null || known === current) return;
  const own = store.rotations.own();
  // Bounded by the rotations this host made.
  for (let step = 0; step <= own.length && known !== current; step++) {
    const next = own.find((r) => r.old_pub === known);
    if (next === undefined) break;
    const reply = readRotationAnswer(await api.rotate(JSON.parse(next.record) as unknown));
    if (!reply.ok && reply.code !== 'ROTATION_UNKNOWN_KEY') {
      store.relay.update({ detail: `the relay refused our rotation (${reply.error})` });
      return;
    }
    known = next.new_pub;
    const relay = store.relay.get();
    store.transaction(() => {
      if (relay?.epoch != null) store.relay.setReceivedThrough(relay.url, relay.epoch, 0, node.nowMs());
      store.relay.update({ session_host_pubkey: known, session: null, enc_ad_at: null, senders_published: null });
    });
  }
  // A chain we cannot follow (rotations made before the relay was set): enrol the current key.
  if (known !== current) store.relay.update({ session_host_pubkey: current, session: null, enc_ad_at: null, senders_published: null });
}
