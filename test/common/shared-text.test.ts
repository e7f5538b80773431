// The small helpers the relay, the host and the CLI share (issue 16 folded their copies): each is
// pinned here once, in the words its callers' messages already used.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorText } from '../../src/common/answer-error.ts';
import { isValidPort, portFromText } from '../../src/common/port.ts';
import { ageText, isoTime } from '../../src/common/time-text.ts';

test("errorText: the status and the answer's error, or a note that it had none", () => {
  assert.equal(errorText({ status: 403, body: { error: 'revoked', code: 'DENIED' } }), 'HTTP 403: revoked');
  assert.equal(errorText({ status: 502, body: '<html>' }), 'HTTP 502: no error text');
  assert.equal(errorText({ status: 500, body: { error: 5 } }), 'HTTP 500: no error text');
});

test('ageText and isoTime', () => {
  assert.deepEqual([0, 59_400, 60_000, 3_599_000, 3_600_000, 12_600_000].map(ageText), ['0 s', '59 s', '1 min', '60 min', '1.0 h', '3.5 h']);
  assert.equal(isoTime(Date.UTC(2026, 11, 2, 12, 0, 0, 5)), '2026-12-02T12:00:00.005Z');
});

test('ports: 0 to 65535, written as plain digits', () => {
  assert.deepEqual(['0', '7374', '65535'].map(portFromText), [0, 7374, 65_535]);
  for (const bad of ['65536', '-1', '80a', '1.5', '1e3', '0x50', '123456', '', ' 80']) assert.equal(portFromText(bad), null, bad);
  assert.ok(isValidPort(0) && isValidPort(65_535));
  assert.ok(!isValidPort(65_536) && !isValidPort(1.5) && !isValidPort(-1));
});
