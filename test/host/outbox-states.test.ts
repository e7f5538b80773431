// The outbox state machine: every named move from the states it may leave and from no other, for
// the kinds it applies to; and the store refuses an illegal move without changing the row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { inSendingOrder, OUTBOX_KINDS, type OutboxKind } from '../../src/host/store/outbox-kinds.ts';
import { lanOnly } from '../../src/host/transport/row-path.ts';
import { canStillMove, nextState, OUTBOX_MOVES, OUTBOX_STATES, type OutboxMoveName, type OutboxState } from '../../src/host/store/outbox-states.ts';
import { HostStore } from '../../src/host/store/host-store.ts';
import { tempDir } from '../helpers/processes.ts';

/** The legal moves, written out by hand: [move, from, to, kinds (all when absent), only rows a relay accepted]. */
const LEGAL: Array<[OutboxMoveName, OutboxState, OutboxState, OutboxKind[]?, boolean?]> = [
  ['handOver', 'queued', 'handed-over'],
  ['reject', 'queued', 'rejected'],
  ['giveUp', 'queued', 'undelivered'],
  ['supersede', 'queued', 'superseded', ['receipt']],
  ['relayAccept', 'queued', 'relay-accepted'],
  ['repush', 'relay-accepted', 'queued'],
  ['settle', 'relay-accepted', 'settled', ['envelope'], true],
  ['settle', 'queued', 'settled', ['envelope'], true],
  ['unconfirm', 'relay-accepted', 'unconfirmed', undefined, true],
  ['unconfirm', 'queued', 'unconfirmed', undefined, true],
  ['expire', 'relay-accepted', 'expired', undefined, true],
  ['expire', 'queued', 'expired', undefined, true],
  ['bounce', 'queued', 'rejected', ['envelope']],
  ['bounce', 'relay-accepted', 'rejected', ['envelope']],
  ['resend', 'handed-over', 'queued', ['receipt']],
  ['resend', 'undelivered', 'queued', ['receipt']],
];

test('each move goes from the states the table lists to its one state, and is refused from any other', () => {
  let legal = 0;
  for (const move of Object.keys(OUTBOX_MOVES) as OutboxMoveName[]) {
    for (const state of OUTBOX_STATES) {
      for (const kind of OUTBOX_KINDS) {
        for (const accepted of [null, 1_000]) {
          const rule = LEGAL.find(
            ([m, from, , kinds, relayOnly]) =>
              m === move && from === state && (kinds === undefined || kinds.includes(kind)) && (relayOnly !== true || accepted !== null),
          );
          const expected = rule?.[2] ?? null;
          if (expected !== null) legal++;
          assert.equal(
            nextState(move, { state, kind, relay_accepted_at: accepted }),
            expected,
            `${move} from ${state} (${kind}, relay_accepted_at ${accepted})`,
          );
        }
      }
    }
  }
  assert.ok(legal > 0);
});

test('illegal moves by name: what each refusal protects', () => {
  const lanEnvelope = { kind: 'envelope' as const, relay_accepted_at: null };
  assert.equal(nextState('handOver', { ...lanEnvelope, state: 'handed-over' }), null, 'a row is handed over once');
  assert.equal(nextState('settle', { ...lanEnvelope, state: 'queued' }), null, 'settled is only for a copy a relay accepted');
  assert.equal(nextState('repush', { ...lanEnvelope, state: 'queued' }), null, 'only a relay-accepted row is pushed again');
  assert.equal(nextState('resend', { ...lanEnvelope, state: 'handed-over' }), null, 'an envelope the peer took is never sent again');
  assert.equal(nextState('supersede', { ...lanEnvelope, state: 'queued' }), null, 'only receipts are superseded');
  assert.equal(nextState('bounce', { ...lanEnvelope, state: 'settled' }), null, 'a confirmed copy cannot be bounced');
  assert.equal(nextState('giveUp', { kind: 'envelope', state: 'relay-accepted', relay_accepted_at: 1 }), null, 'a relay row has the relay deadline instead');
});

test("which states end a row's journey: all but queued and relay-accepted, except that a receipt may be sent again", () => {
  for (const state of OUTBOX_STATES) {
    assert.equal(canStillMove(state, 'envelope'), state === 'queued' || state === 'relay-accepted', `envelope ${state}`);
    assert.equal(canStillMove(state, 'receipt'), ['queued', 'relay-accepted', 'handed-over', 'undelivered'].includes(state), `receipt ${state}`);
  }
});

test("a peer's rows leave rotation first, then envelopes, then receipts, each oldest first; rotations take the LAN only", () => {
  const rows = [
    { kind: 'receipt', id: 1 },
    { kind: 'envelope', id: 5 },
    { kind: 'rotation', id: 9 },
    { kind: 'envelope', id: 2 },
  ] as const;
  assert.deepEqual(
    [...rows].sort(inSendingOrder).map((r) => r.id),
    [9, 2, 5, 1],
  );
  assert.deepEqual(OUTBOX_KINDS.filter(lanOnly), ['rotation']);
});

test('the store makes a move only from where the table allows it, and leaves the row as it was otherwise', () => {
  const store = HostStore.open(join(tempDir('mbx-outbox-'), 'store.db'));
  try {
    const row = (item: string) => {
      store.outbox.enqueue({ kind: 'envelope', item_id: item, msg_id: item, peer_host: 'beta', wire: '{}' }, 1);
      return store.outbox.forMessage(item)[0] ?? assert.fail('no row');
    };
    const lan = row('m-lan');
    assert.equal(store.outbox.end(lan.id, 'handOver', 2, { transport: 'lan', error: null }), true);
    const before = store.outbox.get(lan.id);
    assert.equal(store.outbox.end(lan.id, 'reject', 3, { transport: 'lan', error: 'late' }), false);
    assert.equal(store.outbox.end(lan.id, 'unconfirm', 3, { error: 'late' }), false);
    assert.equal(store.outbox.settleByReceipt('m-lan', 'beta', 3), 0);
    assert.deepEqual(store.outbox.get(lan.id), before, 'refused moves changed nothing');

    const relayed = row('m-relay');
    assert.equal(store.outbox.relayAccept(relayed.id, { seq: 7, epoch: 'e1', accept: '{}', acceptedAtMs: 2 }, 2), true);
    assert.equal(store.outbox.relayAccept(relayed.id, { seq: 8, epoch: 'e1', accept: '{}', acceptedAtMs: 3 }, 3), false);
    assert.equal(store.outbox.requeueRelayAccepted(4), 1);
    assert.equal(store.outbox.get(relayed.id)?.state, 'queued');
    assert.equal(store.outbox.settleByReceipt('m-relay', 'beta', 5), 1, 'queued for a re-push, its receipt still settles it');
    assert.equal(store.outbox.get(relayed.id)?.state, 'settled');
    assert.equal(store.outbox.end(relayed.id, 'bounce', 6, { error: 'bounced' }), false);
    assert.equal(store.outbox.get(relayed.id)?.state, 'settled');
  } finally {
    store.close();
  }
});
