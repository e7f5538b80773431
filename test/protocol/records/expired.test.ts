import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson } from '../../../src/protocol/canonical.ts';
import { expiredItemId, signExpiredNotice, verifyExpiredNotice, type RelayExpiredNotice } from '../../../src/protocol/records/expired.ts';
import { BAD_KEYS, DAY_MS, eachChanged, fixedKey, iso, NOW_MS } from '../fixtures.ts';

const relayKey = fixedKey(71);
const target = fixedKey(72).publicKey;
const notice: RelayExpiredNotice = {
  v: 1,
  type: 'relay-expired',
  item_id: '01KBFZ2V0000000000000000AB',
  target_pubkey: target,
  accepted_at: iso(NOW_MS - 14 * DAY_MS),
  expired_at: iso(NOW_MS),
};

function sigOf(wire: string): string {
  return (JSON.parse(wire) as { sig: string }).sig;
}

describe('relay expiry notices (protocol §3.9)', () => {
  it('item id is expired:<item_id>:<target_pubkey>', () => {
    assert.equal(expiredItemId('abc', target), `expired:abc:${target}`);
  });

  it('wire is canonical {notice, sig} and round-trips as text or bytes', () => {
    const wire = signExpiredNotice(notice, relayKey);
    assert.equal(wire, canonicalJson({ notice, sig: sigOf(wire) }));
    assert.deepEqual(verifyExpiredNotice(wire, relayKey.publicKey), notice);
    assert.deepEqual(verifyExpiredNotice(Buffer.from(wire), relayKey.publicKey), notice);
  });

  it('refuses another relay key, a bad signature and a change of any signed member', () => {
    const wire = signExpiredNotice(notice, relayKey);
    const sig = sigOf(wire);
    assert.equal(verifyExpiredNotice(wire, fixedKey(73).publicKey), null);
    assert.equal(verifyExpiredNotice(canonicalJson({ notice, sig: 'AAAA' }), relayKey.publicKey), null);
    const changes: { [K in keyof RelayExpiredNotice]?: unknown } = {
      item_id: 'other',
      target_pubkey: fixedKey(73).publicKey,
      accepted_at: iso(NOW_MS - DAY_MS),
      expired_at: iso(NOW_MS + 1),
    };
    for (const [member, tampered] of eachChanged(notice, changes)) {
      assert.equal(verifyExpiredNotice(canonicalJson({ notice: tampered, sig }), relayKey.publicKey), null, member);
    }
  });

  it('refuses malformed wires and notices, even when signed', () => {
    const deep = `${'{"notice":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    for (const wire of ['', 'not json', '[]', '{"notice":{}}', Buffer.from([0xff, 0xfe]), deep]) {
      assert.equal(verifyExpiredNotice(wire, relayKey.publicKey), null, String(wire));
    }
    const wire = signExpiredNotice(notice, relayKey);
    assert.equal(verifyExpiredNotice(canonicalJson({ ...(JSON.parse(wire) as object), extra: 1 }), relayKey.publicKey), null);
    const bad: unknown[] = [
      { ...notice, v: 2 },
      { ...notice, type: 'expired' },
      { ...notice, item_id: '' },
      { ...notice, item_id: 'i'.repeat(301) },
      { ...notice, accepted_at: NOW_MS },
      { ...notice, expired_at: 'now' },
      { ...notice, extra: 1 },
      ...BAD_KEYS.map((k) => ({ ...notice, target_pubkey: k })),
    ];
    for (const x of bad) {
      assert.equal(verifyExpiredNotice(signExpiredNotice(x as RelayExpiredNotice, relayKey), relayKey.publicKey), null, JSON.stringify(x));
    }
  });
});
