// A relay process gives back the memory its start left behind once it serves (src/relay/ops/startup-memory.ts):
// the young generation its modules' loading grew is shrunk to its minimum, as no collection would on an idle relay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getHeapSpaceStatistics } from 'node:v8';
import { releaseStartupMemory } from '../../src/relay/ops/startup-memory.ts';

const MiB = 1024 * 1024;

function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? Number.NaN;
}

test('releaseStartupMemory shrinks a grown young generation to its minimum', () => {
  // objects that survive their first collections make V8 grow the young generation, as loading modules does
  const survivors: Array<{ i: number }> = [];
  for (let i = 0; i < 300_000; i += 1) survivors.push({ i });
  assert.ok(youngGenerationBytes() > 2 * MiB, `grown to ${youngGenerationBytes() / MiB} MiB`);
  survivors.length = 0;
  releaseStartupMemory();
  assert.ok(youngGenerationBytes() <= 1 * MiB, `still ${youngGenerationBytes() / MiB} MiB`);
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', "the process's own global gets no gc()");
});
