// The relay as the outbox's second transport (design §3 sender side, §9): rows go by the target's
// pinned key with the row's own wire bytes (sealed once, re-sent unchanged), and a row counts as
// delivered to the relay only on a valid accept receipt: signed by the pinned relay key, for our
// key, this item id, this target and the sha256 of these exact bytes. Anything else is a retry.
import { toBase64 } from '../../../protocol/base64.ts';
import { canonicalJson } from '../../../protocol/canonical.ts';
import { sha256Hex } from '../../../protocol/hash.ts';
import { acceptedTarget, verifyAccept } from '../../../protocol/records/accept.ts';
import { readPushAnswer } from '../../../protocol/relay-api/push.ts';
import { failPoint } from '../../../failpoint.ts';
import type { HostNode } from '../../core/node.ts';
import type { OutboxRow } from '../../store/outbox-table.ts';
import type { PeerRow } from '../../store/peers-table.ts';
import { isFinalRelayRefusal, lanOnly } from '../row-path.ts';
import type { RowResult, Transport } from '../transport.ts';
import type { RelayAnswer } from '../../relay-client/api.ts';
import { forgetSession, noteIfUnreachable, noteRelayReset, type RelaySession } from '../../relay-client/session.ts';

/** Items per push when the relay's info gave no max_batch (its default). */
export const RELAY_DEFAULT_BATCH = 200;
/** About this many wire bytes per push (the relay's body cap is 8 MiB; base64 adds a third). */
export const RELAY_PUSH_MAX_BYTES = 5 * 1024 * 1024;

export class RelayTransport implements Transport {
  readonly name = 'relay';
  readonly #node: HostNode;
  readonly #session: RelaySession;

  constructor(node: HostNode, session: RelaySession) {
    this.#node = node;
    this.#session = session;
  }

  async deliver(peer: PeerRow, rows: readonly OutboxRow[]): Promise<RowResult[]> {
    const results: RowResult[] = [];
    const maxBatch = this.#session.relay.max_batch ?? RELAY_DEFAULT_BATCH;
    let batch: OutboxRow[] = [];
    let bytes = 0;
    for (const row of rows) {
      if (lanOnly(row.kind)) {
        results.push({ rowId: row.id, outcome: 'failed', detail: 'rotation records go over the LAN only' });
        continue;
      }
      if (batch.length > 0 && (batch.length >= maxBatch || bytes + row.wire.length > RELAY_PUSH_MAX_BYTES)) {
        results.push(...(await this.#push(peer, batch)));
        batch = [];
        bytes = 0;
      }
      batch.push(row);
      bytes += row.wire.length;
    }
    if (batch.length > 0) results.push(...(await this.#push(peer, batch)));
    return results;
  }

  async #push(peer: PeerRow, rows: OutboxRow[]): Promise<RowResult[]> {
    const { api, relay } = this.#session;
    const failAll = (detail: string): RowResult[] => rows.map((r) => ({ rowId: r.id, outcome: 'failed', detail }));
    const items = rows.map((r) => ({
      kind: r.kind,
      item_id: r.item_id,
      targets: [{ host_pubkey: peer.host_pubkey, wire_b64: toBase64(Buffer.from(r.wire, 'utf8')) }],
    }));
    failPoint('host.relay.before-push');
    let answer: RelayAnswer;
    try {
      answer = await api.push(items);
    } catch (err) {
      noteIfUnreachable(this.#node, err);
      return failAll(`relay push got no answer: ${err instanceof Error ? err.message : String(err)}`);
    }
    failPoint('host.relay.after-push');
    const reply = readPushAnswer(answer);
    if (!reply.ok) {
      forgetSession(this.#node, reply);
      return failAll(`relay answered ${reply.error}`);
    }
    const byId = reply.value;
    return rows.map((row): RowResult => {
      const result = byId.get(row.item_id);
      if (result === undefined) return { rowId: row.id, outcome: 'failed', detail: 'the relay gave no result for this item' };
      const { status } = result;
      if (status !== 'accepted' && status !== 'duplicate') {
        return { rowId: row.id, outcome: isFinalRelayRefusal(status) ? 'refused' : 'failed', detail: `relay: ${status}` };
      }
      const accept = verifyAccept(result.accept, result.sig, relay.relay_pubkey);
      const target =
        accept === null || accept.sender_pubkey !== this.#node.keys.hostKey.publicKey
          ? null
          : acceptedTarget(accept, row.item_id, peer.host_pubkey, sha256Hex(Buffer.from(row.wire, 'utf8')));
      if (accept === null || target === null) return { rowId: row.id, outcome: 'failed', detail: `relay said ${status} without a valid accept receipt` };
      if (accept.epoch !== this.#node.store.relay.get()?.epoch) noteRelayReset(this.#node, accept.epoch, 'epoch');
      const detail = `relay ${status} seq ${target.seq}`;
      if (row.kind !== 'envelope') return { rowId: row.id, outcome: 'taken', detail };
      return {
        rowId: row.id,
        outcome: 'taken',
        detail,
        relay: { seq: target.seq, epoch: accept.epoch, accept: canonicalJson({ accept, sig: result.sig }), acceptedAtMs: Date.parse(accept.at) },
      };
    });
  }
}
