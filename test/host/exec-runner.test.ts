// The watch --exec runner on a hand-driven clock: the debounce window, one run at a time with mail
// that arrives during a run batched into the next, a failing command retried with a doubling
// (bounded) delay and its batch marked only after a run of it succeeds, the loop guard's held mail
// never run for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messageStatus } from '../../src/host/core/receipts.ts';
import { sendMail } from '../../src/host/send.ts';
import {
  backoffMs,
  EXEC_BACKOFF_MAX_MS,
  startExecRunner,
  type ExecLogEntry,
  type ExecResult,
  type ExecRun,
  type ExecTimers,
} from '../../src/host/wake/exec-runner.ts';
import { setGuardSettings } from '../../src/host/wake/loop-guard.ts';
import { pendingWake } from '../../src/host/wake/wake.ts';
import { makeHost } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

/** Timers on the test clock, fired by `advance`. */
class HandTimers implements ExecTimers {
  readonly #clock: TestClock;
  #pending: Array<{ at: number; fn: () => void }> = [];
  constructor(clock: TestClock) {
    this.#clock = clock;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const entry = { at: this.#clock.now + ms, fn };
    this.#pending.push(entry);
    return entry;
  }
  clearTimeout(handle: unknown): void {
    this.#pending = this.#pending.filter((p) => p !== handle);
  }
  get scheduled(): number[] {
    return this.#pending.map((p) => p.at - this.#clock.now);
  }
  advance(ms: number): void {
    const until = this.#clock.now + ms;
    for (;;) {
      const due = this.#pending.filter((p) => p.at <= until).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.#pending = this.#pending.filter((p) => p !== due);
      this.#clock.now = due.at;
      due.fn();
    }
    this.#clock.now = until;
  }
}

/** A command the test ends by hand. */
function handCommand(): { runCommand: (run: ExecRun) => Promise<ExecResult>; runs: ExecRun[]; end(code: number): Promise<void> } {
  const runs: ExecRun[] = [];
  let finish: ((r: ExecResult) => void) | null = null;
  return {
    runs,
    runCommand: (run) => {
      runs.push(run);
      return new Promise((resolve) => {
        finish = resolve;
      });
    },
    async end(code) {
      assert.ok(finish !== null, 'a run is in progress');
      const f = finish;
      finish = null;
      f({ code, signal: null });
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

function setup(debounceMs = 2_000) {
  const clock = new TestClock();
  const node = makeHost('alpha', clock, ['ann', 'bo', 'cy']);
  const timers = new HandTimers(clock);
  const command = handCommand();
  const log: ExecLogEntry[] = [];
  const runner = startExecRunner({ node, agent: 'ann', command: 'notify-me', debounceMs, runCommand: command.runCommand, timers, log: (e) => log.push(e) });
  const send = (from: string, subject: string, kind = 'message') => sendMail(node, { from, to: ['ann'], subject, body: 'the body', kind }).id;
  return { clock, node, timers, command, log, runner, send };
}

test('new mail runs the command once after the debounce window, with the batch on stdin and in the environment', async () => {
  const { timers, command, runner, send, node } = setup();
  const m1 = send('bo', 'one', 'request');
  runner.poke();
  timers.advance(1_000);
  const m2 = send('cy', 'two');
  runner.poke();
  assert.equal(command.runs.length, 0, 'inside the window');
  timers.advance(1_000);
  assert.equal(command.runs.length, 1);
  const run = command.runs[0] as ExecRun;
  assert.equal(run.command, 'notify-me');
  assert.deepEqual(
    [
      run.env['MBX_AGENT'],
      run.env['MBX_ADDRESS'],
      run.env['MBX_COUNT'],
      run.env['MBX_MESSAGE_IDS'],
      run.env['MBX_SENDERS'],
      run.env['MBX_THREADS'],
      run.env['MBX_NEEDS_REPLY'],
    ],
    ['ann', 'ann@alpha', '2', `${m1} ${m2}`, 'bo@alpha cy@alpha', `${m1} ${m2}`, '1'],
  );
  const stdin = JSON.parse(run.stdin) as { agent: string; messages: Array<Record<string, unknown>> };
  assert.equal(stdin.agent, 'ann@alpha');
  assert.deepEqual(
    stdin.messages.map((m) => [m['id'], m['from'], m['subject'], m['needs_reply'], 'body' in m]),
    [
      [m1, 'bo@alpha', 'one', true, false],
      [m2, 'cy@alpha', 'two', false, false],
    ],
  );
  await command.end(0);
  assert.equal(pendingWake(node, 'ann', 'exec').woken.length, 0, 'marked once the run succeeded');
  assert.equal(messageStatus(node, m1)?.recipients[0]?.wake, 'exec');
  await runner.stop();
});

test('one run at a time: mail arriving during a run goes into the next run, together', async () => {
  const { timers, command, runner, send, log } = setup();
  send('bo', 'one');
  runner.poke();
  timers.advance(2_000);
  const m2 = send('bo', 'two');
  runner.poke();
  const m3 = send('cy', 'three');
  runner.poke();
  timers.advance(10_000);
  assert.equal(command.runs.length, 1, 'no second run while the first goes on');
  await command.end(0);
  timers.advance(2_000);
  assert.equal(command.runs.length, 2);
  assert.equal(command.runs[1]?.env['MBX_MESSAGE_IDS'], `${m2} ${m3}`);
  await command.end(0);
  timers.advance(60_000);
  assert.equal(command.runs.length, 2, 'nothing new: no run');
  assert.deepEqual(
    log.map((e) => [e.messages.length, e.exit]),
    [
      [1, 0],
      [2, 0],
    ],
  );
  await runner.stop();
});

test('a failing command is retried with the same batch after a doubling delay; the batch is marked only on success', async () => {
  const { timers, command, runner, send, log, node } = setup(100);
  const m1 = send('bo', 'one');
  runner.poke();
  timers.advance(100);
  await command.end(1);
  assert.equal(log[0]?.retry_in_ms, 1_000);
  timers.advance(999);
  assert.equal(command.runs.length, 1, 'not before the backoff');
  timers.advance(1);
  assert.equal(command.runs.length, 2);
  await command.end(7);
  assert.equal(log[1]?.retry_in_ms, 2_000);
  const m2 = send('cy', 'two');
  runner.poke();
  timers.advance(2_000);
  assert.equal(command.runs[2]?.env['MBX_MESSAGE_IDS'], `${m1} ${m2}`, 'the failed batch again, with what came meanwhile');
  assert.equal(pendingWake(node, 'ann', 'exec').woken.length, 2, 'not marked while failing');
  await command.end(0);
  assert.equal(pendingWake(node, 'ann', 'exec').woken.length, 0);
  assert.equal(backoffMs(3), 4_000);
  assert.equal(backoffMs(40), EXEC_BACKOFF_MAX_MS, 'bounded');
  await runner.stop();
});

test('mail the loop guard holds is never run for; the outcome says why', async () => {
  const { timers, command, runner, node } = setup();
  setGuardSettings(node.store, { budget: 1 });
  let last = sendMail(node, { from: 'bo', to: ['ann'], subject: 'p', body: 'x' }).id;
  last = sendMail(node, { from: 'ann', to: ['bo'], subject: 'p', body: 'x', replyTo: last }).id;
  node.store.mail.advanceDelivery(node.store.mail.inbox('ann', 1, false)[0]?.id ?? '', 'ann', 'read', null, 0);
  last = sendMail(node, { from: 'bo', to: ['ann'], subject: 'p', body: 'x', replyTo: last }).id;
  runner.poke();
  timers.advance(2_000);
  assert.equal(command.runs.length, 0);
  assert.match(messageStatus(node, last)?.recipients[0]?.wake ?? '', /^none \(held by the loop guard/);
  await runner.stop();
});
