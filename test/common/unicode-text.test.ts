// Where bytes stop being UTF-8 and a JS string stops being Unicode text: the offsets send names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstInvalidUtf8Offset, firstLoneSurrogateIndex } from '../../src/common/unicode-text.ts';

test('the first byte that starts no valid UTF-8 sequence is named; valid text, U+0000 and astral characters included, is null', () => {
  const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
  assert.equal(firstInvalidUtf8Offset(Buffer.from('a\u0000b \u{1F600} é \u{10FFFF}', 'utf8')), null);
  assert.equal(firstInvalidUtf8Offset(bytes()), null);
  assert.equal(firstInvalidUtf8Offset(bytes(0x61, 0x00, 0x62, 0xff, 0xfe)), 3, 'a byte no sequence starts with');
  assert.equal(firstInvalidUtf8Offset(bytes(0x61, 0xc0, 0x80)), 1, 'an overlong NUL');
  assert.equal(firstInvalidUtf8Offset(bytes(0x61, 0x62, 0xed, 0xa0, 0x80)), 2, 'a UTF-16 surrogate (U+D800)');
  assert.equal(firstInvalidUtf8Offset(bytes(0xf4, 0x90, 0x80, 0x80)), 0, 'past U+10FFFF');
  assert.equal(firstInvalidUtf8Offset(bytes(0x61, 0xe2, 0x82)), 1, 'a sequence cut at the end');
  assert.equal(firstInvalidUtf8Offset(bytes(0xe2, 0x82, 0xac, 0x80)), 3, 'a continuation byte on its own');
});

test('the first lone surrogate is named by its index; pairs are text', () => {
  assert.equal(firstLoneSurrogateIndex('a\u{1F600}b'), null);
  assert.equal(firstLoneSurrogateIndex('x\uD800y'), 1);
  assert.equal(firstLoneSurrogateIndex('\u{1F600}\uDC00'), 2);
  assert.equal(firstLoneSurrogateIndex('ab\uD83D'), 2, 'a high surrogate at the end');
});
