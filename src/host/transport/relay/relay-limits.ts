// What the pinned relay will take, known before anything is queued: `send` refuses a message whose
// sealed copy the relay would refuse (rejected:item over size limit), instead of queueing it.
import type { HostNode } from '../../node.ts';

/** max_item_bytes assumed until the relay's info said otherwise (the reference deployment's 512 KiB). */
export const DEFAULT_MAX_ITEM_BYTES = 512 * 1024;

/**
 * Null when every sealed copy fits the pinned relay's max_item_bytes (or no relay is set), else the
 * sentence to refuse the send with. A sealed envelope carries its ciphertext twice (`body` and
 * `enc.body`, protocol §4.1), so the body that fits is about 3/8 of the limit less the envelope's rest.
 */
export function relaySizeProblem(node: HostNode, sealedWires: readonly string[], plainBodyBytes: number): string | null {
  const relay = node.store.relay.get();
  if (relay === undefined || sealedWires.length === 0) return null;
  const limit = relay.max_item_bytes ?? DEFAULT_MAX_ITEM_BYTES;
  const largest = Math.max(...sealedWires.map((w) => Buffer.byteLength(w, 'utf8')));
  if (largest <= limit) return null;
  const overhead = largest - 2 * Math.ceil((plainBodyBytes + 16) / 3) * 4;
  // two base64 copies of body + tag: 8 characters per 3 bytes
  const fits = Math.max(0, 3 * Math.floor((limit - overhead) / 8) - 16);
  return `the sealed message is ${largest} bytes, over the relay's limit of ${limit} bytes (max_item_bytes): `
    + `send a body of at most about ${fits} bytes, or split it`;
}
