// Deterministic keys and times for protocol tests.
import { signingKeyFromSeed, type SigningKey } from '../../src/protocol/keys.ts';
import type { UnsignedEnvelopeV3 } from '../../src/protocol/records/envelope.ts';
import { deriveMeta } from '../../src/protocol/records/envelope-meta.ts';

/** A signing key whose 32-byte seed is `fill` repeated. */
export function fixedKey(fill: number): SigningKey {
  const key = signingKeyFromSeed(Buffer.alloc(32, fill).toString('base64'));
  if (key === null) throw new Error('fixture seed rejected');
  return key;
}

/** 2026-12-02T12:00:00.000Z */
export const NOW_MS = Date.UTC(2026, 11, 2, 12, 0, 0);
export const MINUTE_MS = 60_000;
export const DAY_MS = 24 * 60 * MINUTE_MS;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Texts that are not a 32-byte strict base64 key: short, padded wrongly, url alphabet, whitespace. */
export const BAD_KEYS: unknown[] = ['', 'AAAA', `${'A'.repeat(43)}`, `${'_'.repeat(43)}=`, ` ${Buffer.alloc(32, 1).toString('base64')}`, 42, null];

const FIXTURE_BODY = 'Shall we meet at noon? — Alice ✓';

/** A valid unsigned, unsealed v3 envelope; `overrides` replace fields. */
export function unsignedEnvelope(overrides: Partial<UnsignedEnvelopeV3> = {}): UnsignedEnvelopeV3 {
  return {
    v: 3,
    id: '01KBFZ2V0000000000000000AB',
    ts: iso(NOW_MS),
    from: 'alice@home',
    to: ['bob@work'],
    thread: '01KBFZ2V0000000000000000AB',
    reply_to: null,
    kind: 'message',
    subject: 'Lunch?',
    body: FIXTURE_BODY,
    needs_reply: true,
    refs: [],
    meta: deriveMeta(FIXTURE_BODY),
    authority: null,
    enc: null,
    ...overrides,
  };
}

/** One copy of `record` per entry of `changes`, with that member replaced, labelled by the member. */
export function eachChanged<T extends object>(record: T, changes: { [K in keyof T]?: unknown }): [string, T][] {
  return Object.entries(changes).map(([member, value]) => [member, { ...record, [member]: value }]);
}
