import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateEncKeyPair } from '../../../src/protocol/keys.ts';
import { checkRotation, signRotation, type HostRotation, type HostRotationRecord } from '../../../src/protocol/records/rotation.ts';
import { BAD_KEYS, eachChanged, fixedKey, iso, NOW_MS } from '../fixtures.ts';

const oldKey = fixedKey(51);
const newKey = fixedKey(52);
const rec: HostRotationRecord = {
  v: 1,
  type: 'host-rotation',
  host: 'laptop',
  old_pub: oldKey.publicKey,
  new_pub: newKey.publicKey,
  new_enc_pub: generateEncKeyPair().publicKey,
  iat: iso(NOW_MS),
};
const rotation = signRotation(rec, oldKey, newKey);

function reason(x: unknown): string {
  const result = checkRotation(x);
  return result.ok ? 'ok' : result.reason;
}

/** A rotation over `r` signed by both keys, so only the shape can fail. */
function resigned(r: Record<string, unknown>): HostRotation {
  return signRotation(r as HostRotationRecord, oldKey, newKey);
}

describe('host key rotation records (protocol §3.7)', () => {
  it('round-trips with both signatures over canonical(rec)', () => {
    assert.deepEqual(checkRotation(rotation), { ok: true, rotation });
    assert.deepEqual(checkRotation(JSON.parse(JSON.stringify(rotation))), { ok: true, rotation });
  });

  it("refuses to sign with keys that are not the record's", () => {
    assert.throws(() => signRotation(rec, newKey, oldKey));
    assert.throws(() => signRotation(rec, oldKey, fixedKey(53)));
  });

  it('refuses either signature missing, swapped or by another key', () => {
    assert.equal(reason({ ...rotation, old_sig: rotation.new_sig }), 'bad old key signature');
    assert.equal(reason({ ...rotation, new_sig: rotation.old_sig }), 'bad new key signature');
    assert.equal(reason({ ...rotation, old_sig: fixedKey(53).sign('x') }), 'bad old key signature');
    assert.equal(reason({ ...rotation, new_sig: '' }), 'bad new key signature');
  });

  it('refuses a change of any signed member', () => {
    const changes: { [K in keyof HostRotationRecord]?: unknown } = {
      host: 'desktop',
      new_enc_pub: generateEncKeyPair().publicKey,
      iat: iso(NOW_MS + 1),
      old_pub: fixedKey(53).publicKey,
      new_pub: fixedKey(53).publicKey,
    };
    for (const [member, tampered] of eachChanged(rec, changes)) {
      assert.match(reason({ ...rotation, rec: tampered }), /^bad (old|new) key signature$/, member);
    }
  });

  it('refuses the same key as old and new', () => {
    const same = { ...rec, new_pub: oldKey.publicKey };
    assert.equal(reason({ rec: same, old_sig: oldKey.sign('x'), new_sig: oldKey.sign('x') }), 'old and new key are the same');
  });

  it('refuses malformed rotations with a reason', () => {
    const cases: [unknown, string][] = [
      [null, 'malformed rotation'],
      [{ rec }, 'malformed rotation'],
      [{ ...rotation, extra: 1 }, 'malformed rotation'],
      [resigned({ ...rec, v: 2 }), 'malformed rotation record'],
      [resigned({ ...rec, type: 'rotation' }), 'malformed rotation record'],
      [resigned({ ...rec, extra: 1 }), 'malformed rotation record'],
      [{ ...rotation, rec: 'x' }, 'malformed rotation record'],
      [resigned({ ...rec, host: '' }), 'bad host name'],
      [resigned({ ...rec, host: 'bad name' }), 'bad host name'],
      [resigned({ ...rec, iat: 'yesterday' }), 'bad iat'],
      ...BAD_KEYS.map((k): [unknown, string] => [{ ...rotation, rec: { ...rec, old_pub: k } }, 'bad old key']),
      ...BAD_KEYS.map((k): [unknown, string] => [{ ...rotation, rec: { ...rec, new_pub: k } }, 'bad new key']),
      ...BAD_KEYS.map((k): [unknown, string] => [resigned({ ...rec, new_enc_pub: k }), 'bad new enc key']),
    ];
    for (const [x, expected] of cases) assert.equal(reason(x), expected, JSON.stringify(x)?.slice(0, 100));
  });
});
