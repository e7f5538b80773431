import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fingerprint } from '../../../src/protocol/fingerprint.ts';
import { generateEncKeyPair } from '../../../src/protocol/keys.ts';
import {
  ENVELOPE_KINDS,
  MAX_BODY_BYTES,
  MAX_REF_CHARS,
  MAX_REFS,
  MAX_SUBJECT_CHARS,
  MAX_TO_ADDRESSES,
  checkEnvelopeShape,
  envelopeSigningString,
  isSealed,
  parseAddress,
  signEnvelope,
  verifyEnvelope,
  type EnvelopeV3,
} from '../../../src/protocol/records/envelope.ts';
import { openEnvelopeBody, sealEnvelopeBody } from '../../../src/protocol/seal.ts';
import { eachChanged, fixedKey, unsignedEnvelope } from '../fixtures.ts';

const hostKey = fixedKey(11);
const encKeys = generateEncKeyPair();
const signed = signEnvelope(unsignedEnvelope(), 'home', hostKey);
const sealed = signEnvelope(sealEnvelopeBody(unsignedEnvelope(), encKeys.publicKey), 'home', hostKey);

function reasonOf(x: unknown): string {
  const result = checkEnvelopeShape(x);
  return result.ok ? 'ok' : result.reason;
}

function nested(depth: number): unknown {
  let value: unknown = {};
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('envelope v3 signing (protocol §4.1)', () => {
  it('round-trips: sig names ed25519, the host, the key fingerprint; verify accepts', () => {
    assert.deepEqual(Object.keys(signed.sig).sort(), ['alg', 'host', 'key', 'value']);
    assert.equal(signed.sig.alg, 'ed25519');
    assert.equal(signed.sig.host, 'home');
    assert.equal(signed.sig.key, fingerprint(hostKey.publicKey));
    assert.equal(verifyEnvelope(signed, hostKey.publicKey), true);
    assert.equal(checkEnvelopeShape(signed).ok, true);
  });

  it('signs canonical(envelope without sig)', () => {
    const { sig, ...rest } = signed;
    assert.equal(envelopeSigningString(signed), envelopeSigningString(rest));
    assert.equal(envelopeSigningString(signed).includes('"sig"'), false);
    assert.ok(envelopeSigningString(signed).startsWith('{"authority":null,"body":'));
    assert.equal(sig.value, hostKey.sign(envelopeSigningString(rest)));
  });

  it('a sealed envelope is signed over its ciphertext and still opens', () => {
    assert.equal(isSealed(sealed), true);
    assert.equal(isSealed(signed), false);
    assert.equal(verifyEnvelope(sealed, hostKey.publicKey), true);
    assert.equal(checkEnvelopeShape(sealed).ok, true);
    assert.equal(openEnvelopeBody(sealed, [encKeys.privateKey]), unsignedEnvelope().body);
  });

  it("refuses another key, and a sig.key that is not the verifying key's fingerprint", () => {
    assert.equal(verifyEnvelope(signed, fixedKey(12).publicKey), false);
    assert.equal(verifyEnvelope({ ...signed, sig: { ...signed.sig, key: fingerprint(fixedKey(12).publicKey) } }, hostKey.publicKey), false);
    assert.equal(verifyEnvelope(signed, 'not a key'), false);
    assert.equal(verifyEnvelope({ ...signed, sig: { ...signed.sig, alg: 'rsa' as 'ed25519' } }, hostKey.publicKey), false);
  });

  it('refuses a change of any signed member, an added member, or the signature', () => {
    const changes: { [K in keyof EnvelopeV3]?: unknown } = {
      v: 4,
      id: '01KBFZ2V0000000000000000AC',
      ts: '2026-12-02T12:00:00.001Z',
      from: 'mallory@home',
      to: ['bob@work', 'eve@work'],
      thread: 'other',
      reply_to: '01KBFZ2V0000000000000000AA',
      kind: 'alert',
      subject: 'Lunch!',
      body: 'changed',
      needs_reply: false,
      refs: ['x'],
      meta: { ...signed.meta, a: 1 },
      authority: {},
      enc: sealed.enc,
    };
    for (const [member, tampered] of eachChanged(signed, changes)) {
      assert.equal(verifyEnvelope(tampered, hostKey.publicKey), false, member);
    }
    assert.equal(verifyEnvelope({ ...signed, extra: 1 } as EnvelopeV3, hostKey.publicKey), false);
    assert.equal(verifyEnvelope({ ...signed, sig: { ...signed.sig, value: sealed.sig.value } }, hostKey.publicKey), false);
    for (const [member, tampered] of eachChanged(sealed, { body: signed.body, enc: { ...sealed.enc, nonce: Buffer.alloc(24).toString('base64') } })) {
      assert.equal(verifyEnvelope(tampered, hostKey.publicKey), false, `sealed ${member}`);
    }
  });

  it('does not crash on hostile nesting: shape refuses it, verify says false, sign throws', () => {
    const deep = { ...signed, meta: { ...signed.meta, deep: nested(100_000) } };
    assert.equal(reasonOf(deep), 'nested too deeply');
    assert.equal(verifyEnvelope(deep, hostKey.publicKey), false);
    assert.throws(() => signEnvelope({ ...unsignedEnvelope(), meta: deep.meta }, 'home', hostKey));
  });
});

describe('envelope v3 shape limits', () => {
  it('accepts every kind, every address form, and members beyond the list', () => {
    for (const kind of ENVELOPE_KINDS) assert.equal(reasonOf({ ...signed, kind }), 'ok', kind);
    assert.equal(reasonOf({ ...signed, to: ['bob@work', 'bob', 'role:ops', '*', 'owner'] }), 'ok');
    assert.equal(reasonOf({ ...signed, future_member: true }), 'ok');
    assert.equal(reasonOf({ ...signed, reply_to: '01KBFZ2V0000000000000000AA', authority: { by: 'x' }, refs: ['a'] }), 'ok');
  });

  it('refuses each malformed member with a short reason', () => {
    const cases: [unknown, string][] = [
      [null, 'not an object'],
      [[signed], 'not an object'],
      [{ ...signed, v: 2 }, 'not version 3'],
      [{ ...signed, id: 'not-a-ulid' }, 'bad id'],
      [{ ...signed, ts: '2026-12-02' }, 'bad ts'],
      [{ ...signed, from: 'alice' }, 'bad from'],
      [{ ...signed, from: 'Alice@home' }, 'bad from'],
      [{ ...signed, to: [] }, 'bad to'],
      [{ ...signed, to: 'bob@work' }, 'bad to'],
      [{ ...signed, to: ['bob@work', 'x'.repeat(301)] }, 'address too long'],
      [{ ...signed, to: ['bob@'] }, 'bad to address'],
      [{ ...signed, to: ['role:'] }, 'bad to address'],
      [{ ...signed, to: [7] }, 'bad to address'],
      [{ ...signed, thread: null }, 'bad thread'],
      [{ ...signed, reply_to: 5 }, 'bad reply_to'],
      [{ ...signed, kind: 'spam' }, 'bad kind'],
      [{ ...signed, subject: 1 }, 'bad subject'],
      [{ ...signed, subject: 'line\nbreak' }, 'control characters in subject'],
      [{ ...signed, subject: 'bell\u0007' }, 'control characters in subject'],
      [{ ...signed, body: null }, 'bad body'],
      [{ ...signed, needs_reply: 'yes' }, 'bad needs_reply'],
      [{ ...signed, refs: null }, 'bad refs'],
      [{ ...signed, refs: [1] }, 'bad refs'],
      [{ ...signed, meta: [] }, 'bad meta'],
      [{ ...signed, meta: null }, 'bad meta'],
      [{ ...signed, meta: {} }, 'bad meta.mentions'],
      [{ ...signed, meta: { ...signed.meta, tags: [1] } }, 'bad meta.tags'],
      [{ ...signed, meta: { ...signed.meta, hop: -1 } }, 'bad meta.hop'],
      [{ ...signed, authority: 'root' }, 'bad authority'],
      [{ ...signed, sig: null }, 'bad sig'],
      [{ ...signed, sig: { ...signed.sig, alg: 'rsa' } }, 'bad sig'],
      [{ ...signed, sig: { ...signed.sig, host: '' } }, 'bad sig host'],
      [{ ...signed, sig: { ...signed.sig, key: 'ABCD-0000-0000-0000' } }, 'bad sig key'],
      [{ ...signed, sig: { ...signed.sig, value: 'AAAA' } }, 'bad sig value'],
    ];
    for (const [x, reason] of cases) assert.equal(reasonOf(x), reason, JSON.stringify(x)?.slice(0, 120));
  });

  it('refuses a malformed enc', () => {
    const enc = sealed.enc;
    assert.ok(enc !== null);
    const cases: [unknown, string][] = [
      [{ ...sealed, enc: 'sealed' }, 'bad enc'],
      [{ ...sealed, enc: { ...enc, v: 2 } }, 'bad enc'],
      [{ ...sealed, enc: { ...enc, alg: 'aes' } }, 'bad enc'],
      [{ ...sealed, enc: { ...enc, epk: 'AAAA' } }, 'bad enc epk'],
      [{ ...sealed, enc: { ...enc, nonce: Buffer.alloc(12).toString('base64') } }, 'bad enc nonce'],
      [{ ...sealed, enc: { ...enc, body: 'AAAA' }, body: 'AAAA' }, 'bad enc body'],
      [{ ...sealed, enc: { ...enc, body: 'not base64!' }, body: 'not base64!' }, 'bad enc body'],
      [{ ...sealed, body: 'plaintext' }, 'body is not enc.body'],
    ];
    for (const [x, reason] of cases) assert.equal(reasonOf(x), reason);
  });

  it('holds each limit at its edge', () => {
    const at = (n: number, ch = 'a'): string => ch.repeat(n);
    const cases: [Partial<EnvelopeV3>, Partial<EnvelopeV3>, string][] = [
      [{ subject: at(MAX_SUBJECT_CHARS) }, { subject: at(MAX_SUBJECT_CHARS + 1) }, 'subject too long'],
      // counted in code points: an emoji is one character, though two UTF-16 units
      [{ subject: at(MAX_SUBJECT_CHARS, '🙂') }, { subject: at(MAX_SUBJECT_CHARS + 1, '🙂') }, 'subject too long'],
      [{ to: Array<string>(MAX_TO_ADDRESSES).fill('bob@work') }, { to: Array<string>(MAX_TO_ADDRESSES + 1).fill('bob@work') }, 'too many to addresses'],
      [{ thread: at(300) }, { thread: at(301) }, 'thread too long'],
      [{ reply_to: at(300) }, { reply_to: at(301) }, 'reply_to too long'],
      [{ refs: Array<string>(MAX_REFS).fill('r') }, { refs: Array<string>(MAX_REFS + 1).fill('r') }, 'too many refs'],
      [{ refs: [at(MAX_REF_CHARS)] }, { refs: [at(MAX_REF_CHARS + 1)] }, 'ref too long'],
      [{ body: at(MAX_BODY_BYTES) }, { body: at(MAX_BODY_BYTES + 1) }, 'body too long'],
      // the body limit counts UTF-8 bytes: 'é' is two
      [{ body: at(MAX_BODY_BYTES / 2, 'é') }, { body: `${at(MAX_BODY_BYTES / 2, 'é')}a` }, 'body too long'],
    ];
    for (const [fits, over, reason] of cases) {
      assert.equal(reasonOf({ ...signed, ...fits }), 'ok', reason);
      assert.equal(reasonOf({ ...signed, ...over }), reason);
    }
  });

  it('a sealed body may be the base64 of 256 KiB + 16 bytes, not more', () => {
    const fits = sealEnvelopeBody(unsignedEnvelope({ body: 'a'.repeat(MAX_BODY_BYTES) }), encKeys.publicKey);
    assert.equal(reasonOf(signEnvelope(fits, 'home', hostKey)), 'ok');
    const over = sealEnvelopeBody(unsignedEnvelope({ body: 'a'.repeat(MAX_BODY_BYTES + 1) }), encKeys.publicKey);
    assert.equal(reasonOf(signEnvelope(over, 'home', hostKey)), 'body too long');
  });
});

describe('parseAddress', () => {
  it('reads each address form', () => {
    assert.deepEqual(parseAddress('bob@work'), { kind: 'agent', name: 'bob', host: 'work' });
    assert.deepEqual(parseAddress('bob'), { kind: 'agent', name: 'bob' });
    assert.deepEqual(parseAddress('role:ops-team'), { kind: 'role', role: 'ops-team' });
    assert.deepEqual(parseAddress('*'), { kind: 'all' });
    assert.deepEqual(parseAddress('owner'), { kind: 'owner' });
    assert.deepEqual(parseAddress('owner@work'), { kind: 'agent', name: 'owner', host: 'work' });
  });

  it('refuses names outside ^[a-z0-9][a-z0-9-]{1,39}$ and other junk', () => {
    for (const a of [
      '',
      'b',
      'Bob',
      '-bob',
      'bob@',
      '@work',
      'bob@work@x',
      'bob@Work',
      'role:',
      'role:X',
      `${'a'.repeat(41)}`,
      'bob @work',
      '**',
      'bob@w',
      42,
      null,
    ]) {
      assert.equal(parseAddress(a), null, String(a));
    }
  });
});
