// Envelopes and receipts that reach this host as items pushed by a sender key (through the relay,
// or kept in the relay quarantine): dispatched by kind to receive and acceptReceipt. Host-level, so
// that rotation can release the quarantine without loading the relay client, which imports this.
import { fromBase64 } from '../../protocol/base64.ts';
import { parseJsonWire } from '../../protocol/validate.ts';
import type { HostNode } from './node.ts';
import { acceptReceipt } from './receipts.ts';
import { receive } from './receive.ts';

/** What one envelope or receipt item does to this host: its result, `rejected:<reason>` when refused. */
export function applyInboundItem(node: HostNode, kind: string, senderPubkey: string, wire: Buffer): string {
  const parsed = parseJsonWire(wire);
  if (parsed === undefined || parsed === null) return 'rejected:wire is not JSON';
  if (kind === 'envelope') return receive(node, parsed, { transport: 'relay', peerPubkey: senderPubkey }, wire.toString('utf8'));
  if (kind === 'receipt') return acceptReceipt(node, parsed, null);
  return `rejected:unknown item kind ${kind}`;
}

/**
 * Applies again the quarantined envelopes and receipts pushed by `senderPubkey` (a peer's key we
 * just learned, by its rotation record): those it now takes leave the quarantine. Returns how many.
 */
export function retryQuarantined(node: HostNode, senderPubkey: string): number {
  let released = 0;
  for (const row of node.store.relay.quarantinedFrom(senderPubkey)) {
    const wire = fromBase64(row.wire_b64);
    if ((row.kind !== 'envelope' && row.kind !== 'receipt') || wire === null) continue;
    node.store.transaction(() => {
      if (applyInboundItem(node, row.kind, row.sender_pubkey, wire).startsWith('rejected:')) return;
      node.store.relay.release(row);
      released++;
    });
  }
  return released;
}
