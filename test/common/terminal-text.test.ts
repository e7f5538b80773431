// Text from elsewhere shown on a terminal: controls and bidi characters become visible escapes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeInLine, escapeUnshowable } from '../../src/common/terminal-text.ts';

const REMOTE = 'a\x1b[2Jb\x07\rc\u202ed\u2066e\x7f\x9b\tf\ng';

test('a body keeps its newlines and tabs; every other control and bidi character is escaped', () => {
  assert.equal(escapeUnshowable(REMOTE), 'a\\x1b[2Jb\\x07\\x0dc\\u202ed\\u2066e\\x7f\\x9b\tf\ng');
});

test("a one-line field (a peer's last error, a refusal reason) escapes newlines and tabs too, so it cannot fake another line", () => {
  assert.equal(escapeInLine(REMOTE), 'a\\x1b[2Jb\\x07\\x0dc\\u202ed\\u2066e\\x7f\\x9b\\x09f\\x0ag');
  assert.equal(escapeInLine('plain text: ok'), 'plain text: ok');
});

test('invisible characters are escaped (a zero-width space, tag characters); joiners that emoji need stay', () => {
  const hidden = `ok\u200bgo\u{e0041}\u{e0042}\ufeff\u00ad`;
  assert.equal(escapeInLine(hidden), 'ok\\u200bgo\\u{e0041}\\u{e0042}\\ufeff\\xad');
  assert.equal(escapeUnshowable('👨\u200d👩\u200d👧 ❤\ufe0f'), '👨\u200d👩\u200d👧 ❤\ufe0f');
});
