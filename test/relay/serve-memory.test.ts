// `agentmbx relay serve` gets the relay's memory settings however it is started (docs/relay-operator.md
// "Memory"): bin/agentmbx gives the process the heap flags (NODE_OPTIONS) and MALLOC_ARENA_MAX=2, as
// `npm start` and the Docker image do; a --workers group forks its workers with them even when the
// primary was started without; an operator's own settings win.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { RELAY_HEAP_FLAGS, workerMemorySettings } from '../../src/relay/relay-group.ts';
import { spawnCli, tempDir } from '../helpers/processes.ts';
import { servingWorkers, spawnRelay } from '../helpers/relay-process.ts';
import { waitUntil } from '../helpers/wait.ts';

function environ(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
}

function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
}

/** The test's environment without the memory settings, so that only the relay's own can show. */
function bareEnv(): NodeJS.ProcessEnv {
  const { MALLOC_ARENA_MAX: _arena, NODE_OPTIONS: _options, ...env } = process.env;
  return env;
}

test('bin/agentmbx relay serve runs with the heap flags and MALLOC_ARENA_MAX=2', { timeout: 60_000 }, async () => {
  const child = spawnCli(['relay', 'serve', '--store-dir', tempDir('agentmbx-mem-'), '--port', '0', '--workers', '1'], { env: bareEnv() });
  await child.waitForLine(/agentmbx relay listening on/);
  const env = environ(child.process.pid as number);
  assert.ok(env.includes('MALLOC_ARENA_MAX=2'), env.filter((e) => e.startsWith('MALLOC')).join());
  assert.ok(env.includes(`NODE_OPTIONS=${RELAY_HEAP_FLAGS.join(' ')}`), env.filter((e) => e.startsWith('NODE_OPTIONS')).join());
  child.kill('SIGTERM');
  assert.equal(await child.exited, 0);
});

test('a --workers group forks its workers with the heap flags and MALLOC_ARENA_MAX=2, also when its primary had none', { timeout: 60_000 }, async () => {
  const relay = await spawnRelay(tempDir('agentmbx-mem-group-'), { workers: 2, env: bareEnv() });
  await waitUntil('two workers serving', 10_000, async () => (servingWorkers(relay).length === 2 ? null : relay.child.stderr()));
  for (const pid of servingWorkers(relay)) {
    assert.ok(
      RELAY_HEAP_FLAGS.every((flag) => cmdline(pid).includes(flag)),
      cmdline(pid).join(' '),
    );
    assert.ok(environ(pid).includes('MALLOC_ARENA_MAX=2'));
  }
});

test("an operator's own heap flags and arena count win", () => {
  assert.deepEqual(workerMemorySettings(['--max-old-space-size=512'], {}).execArgv, ['--max-old-space-size=512']);
  assert.deepEqual(workerMemorySettings([], { NODE_OPTIONS: '--max-old-space-size=512' }).execArgv, []);
  assert.deepEqual(workerMemorySettings([], { MALLOC_ARENA_MAX: '4' }).env, { MALLOC_ARENA_MAX: '4' });
  assert.deepEqual(workerMemorySettings(['--inspect=0'], {}), { execArgv: ['--inspect=0', ...RELAY_HEAP_FLAGS], env: { MALLOC_ARENA_MAX: '2' } });
});
