// The envelope's meta (protocol §4.1): what a sender derives from the body, and what receivers refuse.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deriveMeta, MAX_META_HOP, MAX_META_LOCAL_NAMES, MAX_META_PROJECT_CHARS, metaProblem } from '../../../src/protocol/records/envelope-meta.ts';

const EMPTY = { mentions: [], directives: [], tags: [], task_refs: [] };

describe('deriveMeta', () => {
  it('golden: mentions, directives, tags and task refs, each once, in order of first appearance', () => {
    const body = [
      '@ann please look (@Carol too), and @bob@desk. Mail x@y.z if stuck.',
      '/claim T123 and /done; a/claim is a path. /done again, @ANN again.',
      '#Release-2 ships, #1bad does not. T1, T1234567 and xT123 are no refs; T123 again, #release-2 again.',
    ].join('\n');
    assert.deepEqual(deriveMeta(body), {
      mentions: ['ann', 'carol', 'bob@desk'],
      directives: ['claim', 'done'],
      tags: ['release-2'],
      task_refs: ['T123'],
    });
  });

  it('an empty or plain body gives four empty arrays', () => {
    assert.deepEqual(deriveMeta(''), EMPTY);
    assert.deepEqual(deriveMeta('nothing to see here'), EMPTY);
  });

  it('sentence punctuation ends a word; a word that goes on is no match, never cut short', () => {
    assert.deepEqual(deriveMeta('@ann, @bea: @cy! /done. /checkin? #ship-it, T42.'), {
      mentions: ['ann', 'bea', 'cy'],
      directives: ['done', 'checkin'],
      tags: ['ship-it'],
      task_refs: ['T42'],
    });
    // a name continued by a character NAME_RE does not allow, or by a dotted domain
    assert.deepEqual(deriveMeta('@ann_x @bob@desk.example.com @anné @a1@b2@c3 @x').mentions, []);
    // a name longer than 40 characters is no mention at all
    assert.deepEqual(deriveMeta(`@${'a'.repeat(40)} @${'b'.repeat(41)}`).mentions, ['a'.repeat(40)]);
    assert.deepEqual(deriveMeta('/claimed /done.txt /done/x /Claim (/claim').directives, []);
    assert.deepEqual(deriveMeta(`#tagé #a #x${'y'.repeat(40)} #x${'y'.repeat(41)} a#tag`).tags, [`x${'y'.repeat(40)}`]);
    assert.deepEqual(deriveMeta('T12a T12_3 éT12 t123 T12-3 (T99)').task_refs, ['T12', 'T99']);
  });

  it('mentions only match ASCII names: no Unicode case folding into a name', () => {
    // With a case-insensitive Unicode match, `ſ` (long s) and `K` (Kelvin sign) would pass as s and k.
    assert.deepEqual(deriveMeta('@ſam @\u212Aim #\u212Aey').mentions, []);
    assert.deepEqual(deriveMeta('#\u212Aey').tags, []);
  });

  it('every mention it derives is a valid name or name@host, lower-cased', () => {
    const meta = deriveMeta('@Ann-Lee @BOB@Desk-2 (@c0');
    assert.deepEqual(meta.mentions, ['ann-lee', 'bob@desk-2', 'c0']);
    assert.equal(metaProblem(meta), null);
  });
});

describe('metaProblem', () => {
  it('requires the four arrays of strings, in this order of reasons', () => {
    assert.equal(metaProblem(EMPTY), null);
    assert.equal(metaProblem({}), 'bad meta.mentions');
    assert.equal(metaProblem({ ...EMPTY, mentions: undefined }), 'bad meta.mentions');
    for (const member of ['mentions', 'directives', 'tags', 'task_refs']) {
      const { [member]: _dropped, ...rest } = EMPTY as Record<string, unknown>;
      assert.equal(metaProblem(rest), `bad meta.${member}`, `${member} missing`);
      for (const bad of [null, 'ann', {}, [1], ['ok', null]]) {
        assert.equal(metaProblem({ ...EMPTY, [member]: bad }), `bad meta.${member}`, `${member} = ${JSON.stringify(bad)}`);
      }
    }
    for (const bad of [null, [], 'meta', 1]) assert.equal(metaProblem(bad), 'bad meta');
  });

  it('accepts each optional member at its edges, and unknown members', () => {
    const goods: Record<string, unknown[]> = {
      origin: ['agent', 'external'],
      hop: [0, 7, MAX_META_HOP],
      project: ['', 'agentmbx', 'p'.repeat(MAX_META_PROJECT_CHARS)],
      project_key: ['', 'k'.repeat(MAX_META_PROJECT_CHARS)],
      local_names: [[], ['ann', 'bob-2'], Array<string>(MAX_META_LOCAL_NAMES).fill('ann')],
      sender_verification: ['unverified', 'leased'],
      x_future: [null, { any: ['thing'] }],
    };
    for (const [member, values] of Object.entries(goods)) {
      for (const value of values) assert.equal(metaProblem({ ...EMPTY, [member]: value }), null, `${member} = ${JSON.stringify(value)?.slice(0, 40)}`);
    }
  });

  it('refuses any other value of an optional member with its name', () => {
    const bads: Record<string, unknown[]> = {
      origin: [null, 'Agent', 'web', 1],
      hop: [null, -1, MAX_META_HOP + 1, 1.5, '3', Number.NaN],
      project: [null, 5, 'p'.repeat(MAX_META_PROJECT_CHARS + 1)],
      project_key: [null, ['k'], 'k'.repeat(MAX_META_PROJECT_CHARS + 1)],
      local_names: [null, 'ann', ['Ann'], ['a'], ['ann@home'], [1], Array<string>(MAX_META_LOCAL_NAMES + 1).fill('ann')],
      sender_verification: [null, 'verified', true],
    };
    for (const [member, values] of Object.entries(bads)) {
      for (const value of values) {
        assert.equal(metaProblem({ ...EMPTY, [member]: value }), `bad meta.${member}`, `${member} = ${JSON.stringify(value)?.slice(0, 40)}`);
      }
    }
  });
});
