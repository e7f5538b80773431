// The daemon in-process: its first tick flushes, and a peer's verified call wakes the tick for
// rows that were waiting out a backoff.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, type RunningDaemon } from '../../src/host/daemon.ts';
import { listInbox } from '../../src/host/mailbox.ts';
import type { HostNode } from '../../src/host/core/node.ts';
import { sendMail } from '../../src/host/send.ts';
import { makeHost, pin } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';
import { wakeDaemon } from '../../src/host/daemon-wake.ts';
import { withDeadline } from '../helpers/wait.ts';

const HOUR = 3_600_000;

function logWaiter(): { log: (line: string) => void; next: (pattern: RegExp) => Promise<string> } {
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  return {
    log(line) {
      lines.push(line);
      for (const w of [...waiters])
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
    },
    next(pattern) {
      const seen = lines.find((l) => pattern.test(l));
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ pattern, resolve }));
    },
  };
}

async function daemon(node: HostNode, log: (line: string) => void): Promise<RunningDaemon> {
  // An hour between ticks: only the first tick, explicit ticks and wake-ups run in this test.
  const d = await startDaemon(node, { port: 0, bind: '127.0.0.1', tickMs: HOUR, log });
  after(() => d.stop());
  return d;
}

test("a peer's verified call wakes the tick, and rows waiting out a backoff leave at once", { timeout: 30_000 }, async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann']);
  const b = makeHost('beta', clock, ['bob']);
  const logA = logWaiter();
  const logB = logWaiter();
  const da = await daemon(a, logA.log);
  const db = await daemon(b, logB.log);
  pin(a, b, db.url);
  pin(b, a, da.url);
  // The first ticks after pairing call the peer anyway (its directory, our beacon): done before the test starts.
  await da.tick();
  await db.tick();
  const toBob = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'waiting', body: 'x' });
  // As if an earlier attempt had failed: the row waits an hour.
  a.store.outbox.retryLater(a.store.outbox.forMessage(toBob.id)[0]?.id ?? assert.fail(), 'earlier failure', clock.now + HOUR);
  await da.tick();
  assert.equal(listInbox(b, 'bob').length, 0, 'not sent before its time');
  // Beta's tick delivers mail to alpha; that verified call makes alpha's rows due and wakes alpha.
  const toAnn = sendMail(b, { from: 'bob', to: ['ann@alpha'], subject: 'hi', body: 'y' });
  await db.tick();
  assert.match(await logB.next(new RegExp(`envelope ${toAnn.id} -> alpha`)), /accepted$/);
  assert.match(await logA.next(new RegExp(`envelope ${toBob.id} -> beta`)), /accepted$/);
  assert.deepEqual(
    listInbox(b, 'bob').map((m) => m.subject),
    ['waiting'],
  );
});

test('a local send wakes the daemon at once through the socket in its home (the tick is an hour away)', { timeout: 30_000 }, async () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann']);
  const b = makeHost('beta', clock, ['bob']);
  const logA = logWaiter();
  const da = await daemon(a, logA.log);
  const db = await daemon(b, () => {});
  pin(a, b, db.url);
  pin(b, a, da.url);
  await da.tick();
  const sent = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'now', body: 'x' });
  await wakeDaemon(a.home);
  assert.match(await withDeadline('the message to leave without a tick', 10_000, logA.next(new RegExp(`envelope ${sent.id} -> beta`))), /accepted$/);
  assert.deepEqual(
    listInbox(b, 'bob').map((m) => m.id),
    [sent.id],
  );
});
