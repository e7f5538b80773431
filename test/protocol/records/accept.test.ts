import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sha256Hex } from '../../../src/protocol/hash.ts';
import { canonicalJson } from '../../../src/protocol/canonical.ts';
import { verifySignature } from '../../../src/protocol/keys.ts';
import { MAX_ACCEPT_TARGETS, acceptCanonicalText, acceptedTarget, signAccept, verifyAccept, type RelayAccept } from '../../../src/protocol/records/accept.ts';
import { signCanonical } from '../../../src/protocol/validate.ts';
import { BAD_KEYS, eachChanged, fixedKey, iso, NOW_MS } from '../fixtures.ts';

const relayKey = fixedKey(31);
const sender = fixedKey(32).publicKey;
const target = fixedKey(33).publicKey;
const otherTarget = fixedKey(34).publicKey;
const accept: RelayAccept = {
  v: 1,
  type: 'relay-accept',
  relay_pubkey: relayKey.publicKey,
  epoch: 'e-2026-a',
  sender_pubkey: sender,
  item_id: '01KBFZ2V0000000000000000AB',
  targets: [
    { host_pubkey: target, seq: 7, wire_hash: sha256Hex('wire') },
    { host_pubkey: otherTarget, seq: 1, wire_hash: sha256Hex('wire2') },
  ],
  at: iso(NOW_MS),
};
const sig = signAccept(accept, relayKey);

describe('relay accept receipts (protocol §3.3)', () => {
  it('round-trips, whatever the member order after JSON transport', () => {
    assert.deepEqual(verifyAccept(accept, sig, relayKey.publicKey), accept);
    assert.deepEqual(verifyAccept(JSON.parse(JSON.stringify({ ...accept })), sig, relayKey.publicKey), accept);
  });

  it('refuses another relay key, an accept naming another relay, a bad signature', () => {
    const other = fixedKey(35);
    assert.equal(verifyAccept(accept, sig, other.publicKey), null);
    const naming = { ...accept, relay_pubkey: other.publicKey };
    assert.equal(verifyAccept(naming, signAccept(naming, relayKey), relayKey.publicKey), null);
    assert.equal(verifyAccept(accept, 'AAAA', relayKey.publicKey), null);
    assert.equal(verifyAccept(accept, undefined, relayKey.publicKey), null);
  });

  it('refuses a change of any signed member', () => {
    const changes: { [K in keyof RelayAccept]?: unknown } = {
      epoch: 'e-2026-b',
      sender_pubkey: otherTarget,
      item_id: 'other',
      at: iso(NOW_MS + 1),
      targets: [{ ...accept.targets[0], seq: 8 }, accept.targets[1]],
    };
    for (const [member, tampered] of eachChanged(accept, changes)) assert.equal(verifyAccept(tampered, sig, relayKey.publicKey), null, member);
    const hashChanged = [{ host_pubkey: target, seq: 7, wire_hash: sha256Hex('other') }, accept.targets[1]];
    assert.equal(verifyAccept({ ...accept, targets: hashChanged }, sig, relayKey.publicKey), null);
  });

  it('refuses malformed accepts even when signed', () => {
    const bad: [string, unknown][] = [
      ['v', { ...accept, v: 2 }],
      ['type', { ...accept, type: 'accept' }],
      ['empty epoch', { ...accept, epoch: '' }],
      ['long epoch', { ...accept, epoch: 'e'.repeat(129) }],
      ['item id', { ...accept, item_id: '' }],
      ['long item id', { ...accept, item_id: 'i'.repeat(301) }],
      ['no targets', { ...accept, targets: [] }],
      ['seq 0', { ...accept, targets: [{ host_pubkey: target, seq: 0, wire_hash: sha256Hex('w') }] }],
      ['hash', { ...accept, targets: [{ host_pubkey: target, seq: 1, wire_hash: 'ABC' }] }],
      ['target extra', { ...accept, targets: [{ host_pubkey: target, seq: 1, wire_hash: sha256Hex('w'), x: 1 }] }],
      ['too many targets', { ...accept, targets: Array(MAX_ACCEPT_TARGETS + 1).fill(accept.targets[0]) }],
      ['at', { ...accept, at: 'now' }],
      ['extra', { ...accept, extra: true }],
      ['array', [accept]],
      ...BAD_KEYS.map((k): [string, unknown] => [`sender ${String(k)}`, { ...accept, sender_pubkey: k }]),
      ...BAD_KEYS.map((k): [string, unknown] => [`target ${String(k)}`, { ...accept, targets: [{ host_pubkey: k, seq: 1, wire_hash: sha256Hex('w') }] }]),
    ];
    for (const [label, x] of bad) {
      const resigned = typeof x === 'object' && x !== null && !Array.isArray(x) ? signCanonical(x, relayKey) : sig;
      assert.equal(verifyAccept(x, resigned, relayKey.publicKey), null, label);
    }
  });

  it('signs the RFC 8785 text of the accept, whatever the strings it holds', () => {
    const awkward = [
      '',
      'plain',
      'quote " and \\ backslash',
      'controls \u0000\u001f\u007f',
      'é ñ 中文 😀',
      '\ud800 lone',
      'tail \udfff',
      '\u2028\u2029',
      '</script>',
    ];
    let seed = 7;
    const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
    const pick = (): string => awkward[next() % awkward.length] as string;
    for (let round = 0; round < 200; round += 1) {
      const record: RelayAccept = {
        v: 1,
        type: 'relay-accept',
        relay_pubkey: pick(),
        epoch: pick(),
        sender_pubkey: pick(),
        item_id: pick(),
        at: pick(),
        targets: Array.from({ length: 1 + (next() % 3) }, () => ({ host_pubkey: pick(), seq: next() * 4_096 + (next() % 4_096), wire_hash: pick() })),
      };
      // members in another order than the canonical one: the text must not depend on it
      const shuffled = Object.fromEntries(Object.entries(record).reverse()) as RelayAccept;
      assert.equal(acceptCanonicalText(shuffled), canonicalJson(record));
    }
    assert.equal(verifySignature(relayKey.publicKey, canonicalJson(accept), sig), true);
    assert.throws(() => acceptCanonicalText({ ...accept, targets: [{ host_pubkey: target, seq: 2 ** 53, wire_hash: 'h' }] }), RangeError);
  });

  it('acceptedTarget matches item id, host key and wire hash together', () => {
    assert.deepEqual(acceptedTarget(accept, accept.item_id, target, sha256Hex('wire')), accept.targets[0]);
    assert.equal(acceptedTarget(accept, '01KBFZ2V0000000000000000AC', target, sha256Hex('wire')), null);
    assert.equal(acceptedTarget(accept, accept.item_id, target, sha256Hex('wire2')), null);
    assert.equal(acceptedTarget(accept, accept.item_id, sender, sha256Hex('wire')), null);
  });
});
