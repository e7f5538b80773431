import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TickedDeadlines } from '../../src/relay/core/ticked-deadlines.ts';

test('deadlines are rounded down to the tick grid and everything due in one tick comes in one callback run', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = 0;
  const fired: string[][] = [];
  let run: string[] | null = null;
  const deadlines = new TickedDeadlines<string>({
    tickMs: 250,
    nowMs: () => now,
    onDue: (value) => {
      if (run === null) {
        run = [];
        fired.push(run);
        // a run is one timer callback: the next one starts a new list
        queueMicrotask(() => {
          run = null;
        });
      }
      run.push(value);
    },
  });
  deadlines.add('a', 10_000); // due at 10,000: the tick that starts then
  now = 130;
  deadlines.add('b', 10_000); // 10,130: the same tick
  deadlines.add('c', 10_119); // 10,249: the same tick
  deadlines.add('d', 10_120); // 10,250: the next tick
  t.mock.timers.tick(9_999);
  assert.deepEqual(fired, [], 'nothing comes before its tick');
  t.mock.timers.tick(1);
  assert.deepEqual(fired, [['a', 'b', 'c']], 'a tick brings every deadline in it, never later than the deadline');
  await Promise.resolve();
  t.mock.timers.tick(250);
  assert.equal(fired.length, 2);
  assert.deepEqual(fired[1], ['d']);
});

test('a deleted deadline never comes, and its tick keeps no timer once empty', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const fired: string[] = [];
  const deadlines = new TickedDeadlines<string>({ tickMs: 100, nowMs: () => 0, onDue: (value) => fired.push(value) });
  const a = deadlines.add('a', 1_000);
  const b = deadlines.add('b', 1_000);
  assert.equal(a, b, 'one tick');
  deadlines.delete(a, 'a');
  deadlines.delete(a, 'a'); // twice: harmless
  t.mock.timers.tick(1_000);
  assert.deepEqual(fired, ['b']);
  const c = deadlines.add('c', 500);
  deadlines.delete(c, 'c');
  t.mock.timers.runAll();
  assert.deepEqual(fired, ['b']);
});
