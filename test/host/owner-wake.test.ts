// The owner's view of waking, as host operations on a real store with an injected clock: per
// mailbox the wake paths that told it and what they have not told yet, per recipient how its agent
// was woken (or why not), the loop guard's budget, window and held threads as `guard list` shows
// them, and the page's resume is `guard resume`'s operation (the same rules, the same refusal).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostError } from '../../src/host/core/host-error.ts';
import { ownerView } from '../../src/host/owner-view.ts';
import { sendMail } from '../../src/host/send.ts';
import { guardOverview, resumeThread, setGuardSettings } from '../../src/host/wake/loop-guard.ts';
import { takeWake } from '../../src/host/wake/wake.ts';
import { makeHost } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test("the owner's view shows the wake paths per mailbox, how each recipient was woken, and the threads the loop guard holds; resume lifts one", () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann', 'al']);
  setGuardSettings(a.store, { budget: 1, windowMs: 60_000 });
  const before = ownerView(a, null);
  assert.deepEqual(
    before.mailboxes.map((m) => [m.name, m.wake]),
    [
      ['owner', []],
      ['al', []],
      ['ann', []],
    ],
    'no wake path has looked yet',
  );
  assert.deepEqual(before.guard, { budget: 1, window_ms: 60_000, held: [] });

  const root = sendMail(a, { from: 'al', to: ['ann'], subject: 'ping', body: 'x' }).id;
  clock.advance(1000);
  assert.equal(takeWake(a, 'ann', 'hook').woken.length, 1);
  const reply = sendMail(a, { from: 'ann', to: ['al'], subject: 'pong', body: 'x', replyTo: root }).id;
  clock.advance(1000);
  // the second message of the pair in the thread passes the budget of 1: al's exec path is held
  assert.equal(takeWake(a, 'al', 'exec').woken.length, 0);
  clock.advance(1000);
  sendMail(a, { from: 'al', to: ['ann'], subject: 'unrelated', body: 'x' });

  const view = ownerView(a, null);
  const wakeOf = (name: string): unknown => view.mailboxes.find((m) => m.name === name)?.wake.map((w) => [w.path, w.untold, w.last_at]);
  assert.deepEqual(wakeOf('ann'), [['hook', 1, new Date(clock.now - 2000).toISOString()]], 'hook told ann; one unread came after');
  assert.deepEqual(wakeOf('al'), [['exec', 0, new Date(clock.now - 1000).toISOString()]], 'the held message is looked at, not left untold');
  const messages = view.threads.flatMap((t) => t.messages);
  const wakeTo = (id: string): unknown => messages.find((m) => m.id === id)?.recipients.map((r) => [r.recipient, r.wake]);
  assert.deepEqual(wakeTo(root), [['ann@alpha', 'hook']]);
  assert.match(String((wakeTo(reply) as string[][])[0]?.[1]), new RegExp(`^none \\(held by the loop guard: thread ${root} tripped`));
  assert.deepEqual(view.guard, guardOverview(a.store), 'the page shows what guard list shows');
  assert.deepEqual(
    view.guard.held.map((t) => [t.thread, t.pair, t.count, t.message]),
    [[root, 'al@alpha <-> ann@alpha', 2, reply]],
  );

  // the page's resume is guard resume's operation: it lifts the thread once, then refuses as the CLI does
  const lifted = resumeThread(a, root, "the owner (the owner's page)");
  assert.equal(lifted.thread, root);
  assert.deepEqual(ownerView(a, null).guard.held, []);
  assert.equal(a.store.db.get<{ by: string }>('SELECT lifted_by AS by FROM wake_guard_trips WHERE thread = ?', root)?.by, "the owner (the owner's page)");
  assert.throws(
    () => resumeThread(a, root, "the owner (the owner's page)"),
    (err: unknown) => err instanceof HostError && err.kind === 'not-found',
  );
});
