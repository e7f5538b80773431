// Hop signatures checked on worker threads give exactly the event loop's verdicts, stay bounded,
// and survive a dying worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { signRelayHop } from '../../src/protocol/relay-hop.ts';
import { verifyHopInline, type HopCheck } from '../../src/relay/crypto/hop-verifier.ts';
import { hopVerifyPool, MAX_PENDING_HOP_CHARS, MAX_PENDING_HOP_CHECKS } from '../../src/relay/crypto/hop-verify-pool.ts';
import { REPO_ROOT, spawnNode } from '../helpers/processes.ts';

const key = generateSigningKey();
const other = generateSigningKey();

function signedCheck(rawBody: string): HopCheck {
  const request = { method: 'POST', path: '/v2/relay/items', rawBody };
  const headers = signRelayHop(request, 'alpha', key, 1_000);
  return { publicKey: key.publicKey, request, ts: headers['x-mbx-ts'], sig: headers['x-mbx-sig'] };
}

/** Good checks and every way a check can be wrong. */
function mixedChecks(): HopCheck[] {
  const good = signedCheck('{"items":[]}');
  return [
    good,
    signedCheck('é unicode body ✓'),
    { ...good, publicKey: other.publicKey },
    { ...good, request: { ...good.request, rawBody: '{"items":[1]}' } },
    { ...good, request: { ...good.request, method: 'GET' } },
    { ...good, ts: '1001' },
    { ...good, sig: 'not base64!' },
    { ...good, sig: 42 },
    { ...good, sig: { toString: () => 'x' } },
    { ...good, publicKey: 'AAAA' },
    { ...good, request: { ...good.request, rawBody: 'x'.repeat(100_000) } },
  ];
}

test('the pool gives the same verdict as the event loop, for good and bad hops, in any number', async () => {
  const pool = hopVerifyPool({ threads: 2, onFailure: (reason) => assert.fail(reason) });
  try {
    const checks = Array.from({ length: 20 }, mixedChecks).flat();
    const verdicts = await Promise.all(checks.map((check) => pool.verify(check)));
    assert.deepEqual(verdicts, checks.map(verifyHopInline));
    assert.equal(verdicts.filter(Boolean).length, 40, 'exactly the two signed checks of each round pass');
    assert.equal(pool.pending(), 0);
  } finally {
    await pool.close();
  }
});

test(`at most ${MAX_PENDING_HOP_CHECKS} checks wait for a worker; the rest are checked on the event loop`, async () => {
  const pool = hopVerifyPool({ threads: 1, onFailure: (reason) => assert.fail(reason) });
  try {
    const check = signedCheck('{}');
    const verdicts = Array.from({ length: MAX_PENDING_HOP_CHECKS + 50 }, () => pool.verify(check));
    assert.equal(pool.pending(), MAX_PENDING_HOP_CHECKS);
    assert.ok((await Promise.all(verdicts)).every((ok) => ok));
    assert.equal(pool.pending(), 0);
  } finally {
    await pool.close();
  }
});

test('hop strings of at most MAX_PENDING_HOP_CHARS wait for the threads; a body beyond that is checked on the event loop', async () => {
  const pool = hopVerifyPool({ threads: 1, onFailure: (reason) => assert.fail(reason) });
  try {
    const big = signedCheck('b'.repeat(Math.floor(MAX_PENDING_HOP_CHARS / 3)));
    const verdicts = [pool.verify(big), pool.verify(big), pool.verify(big), pool.verify(signedCheck('{}'))];
    assert.equal(pool.pending(), 3, 'two big ones and the small one wait; the third big one did not fit');
    assert.deepEqual(await Promise.all(verdicts), [true, true, true, true]);
    assert.equal(pool.pending(), 0);
  } finally {
    await pool.close();
  }
});

test('a worker that dies: its waiting checks are answered on the event loop, once told, and the pool goes on without threads', async () => {
  const failures: string[] = [];
  const pool = hopVerifyPool({
    threads: 1,
    onFailure: (reason) => failures.push(reason),
    workerUrl: new URL('../helpers/exiting-hop-worker.ts', import.meta.url),
  });
  try {
    const checks = mixedChecks();
    assert.deepEqual(await Promise.all(checks.map((check) => pool.verify(check))), checks.map(verifyHopInline));
    assert.equal(failures.length, 1);
    assert.match(failures[0] ?? '', /exited with code 3; hop signatures are now checked on the event loop/);
    assert.deepEqual(await Promise.all(checks.map((check) => pool.verify(check))), checks.map(verifyHopInline));
    assert.equal(pool.pending(), 0);
  } finally {
    await pool.close();
  }
  assert.equal(failures.length, 1, 'closing is not a failure');
});

test('closing answers what still waits, and checks after it run on the event loop', async () => {
  const failures: string[] = [];
  const pool = hopVerifyPool({ threads: 1, onFailure: (reason) => failures.push(reason) });
  const checks = mixedChecks();
  const waiting = Promise.all(checks.map((check) => pool.verify(check)));
  await pool.close();
  assert.deepEqual(await waiting, checks.map(verifyHopInline));
  assert.deepEqual(await Promise.all(checks.map((check) => pool.verify(check))), checks.map(verifyHopInline));
  assert.deepEqual(failures, []);
});

test('the thread count is checked', () => {
  for (const threads of [0, -1, 1.5, 17]) assert.throws(() => hopVerifyPool({ threads, onFailure: () => undefined }), RangeError);
});

test('a pool answers on its threads whatever flags started the process (here -e), and an open pool does not keep it alive', { timeout: 60_000 }, async () => {
  const module = (path: string): string => JSON.stringify(pathToFileURL(`${REPO_ROOT}/${path}`).href);
  const script = `
    import { generateSigningKey } from ${module('src/protocol/keys.ts')};
    import { signRelayHop } from ${module('src/protocol/relay-hop.ts')};
    import { hopVerifyPool } from ${module('src/relay/crypto/hop-verify-pool.ts')};
    const key = generateSigningKey();
    const request = { method: 'GET', path: '/v2/relay/items', rawBody: '' };
    const headers = signRelayHop(request, 'alpha', key, 1000);
    const pool = hopVerifyPool({ threads: 2, onFailure: (reason) => console.log(reason) });
    console.log('verdict', await pool.verify({ publicKey: key.publicKey, request, ts: headers['x-mbx-ts'], sig: headers['x-mbx-sig'] }));`;
  const child = spawnNode(['--input-type=module', '-e', script]);
  assert.equal(await child.exited, 0, child.stderr());
  assert.equal(child.stdout().trim(), 'verdict true', 'answered by a thread, and the process then ended without close()');
});
