// Restarts keep everything; a restore that kept its epoch shows up through head_seq (design §4–§5).
import assert from 'node:assert/strict';
import { cpSync, rmSync } from 'node:fs';
import { test } from 'node:test';
import { enrolledHost, pushAccepted, startTestRelay, testHost, type TestHost } from '../helpers/relay-fixture.ts';
import { TestClock } from '../helpers/clock.ts';
import { tempDir } from '../helpers/processes.ts';

test('a restart keeps enrolments, queues, epoch and the sequence', async () => {
  const dir = tempDir();
  const clock = new TestClock();
  const first = await startTestRelay({ dir, clock });
  const a = await enrolledHost(first, 'laptop');
  const b = await enrolledHost(first, 'desk');
  const s1 = await pushAccepted(a, b, clock.now);
  await first.stop();
  clock.now -= 30_000; // even with the clock set back (less than the heartbeat rule allows), seqs keep growing
  const second = await startTestRelay({ dir, clock });
  assert.equal(second.service.epoch, first.service.epoch);
  const [a2, b2] = [a, b].map((h) => ({ ...testHost(second, h.name, h.key), enc: h.enc })) as [TestHost, TestHost];
  const s2 = await pushAccepted(a2, b2, clock.now);
  assert.ok(s2 > s1, 'seqs never restart');
  const page = (await b2.api.pull(0)).body as { items: Array<{ seq: number }>; head_seq: number };
  assert.deepEqual(
    page.items.map((i) => i.seq),
    [s1, s2],
  );
});

test('a restore that kept its epoch: head_seq goes below what the receiver processed, new seqs stay above', async () => {
  const dir = tempDir();
  const backup = tempDir();
  const clock = new TestClock();
  const first = await startTestRelay({ dir, clock });
  const a = await enrolledHost(first, 'laptop');
  const b = await enrolledHost(first, 'desk');
  const before = await pushAccepted(a, b, clock.now);
  await first.stop();
  cpSync(dir, backup, { recursive: true });

  clock.advance(1_000);
  const live = await startTestRelay({ dir, clock });
  const [a2, b2] = [a, b].map((h) => ({ ...testHost(live, h.name, h.key), enc: h.enc })) as [TestHost, TestHost];
  const afterBackup = await pushAccepted(a2, b2, clock.now);
  const receivedThrough = ((await b2.api.pull(0)).body as { last_seq: number }).last_seq;
  assert.equal(receivedThrough, afterBackup);
  await live.stop();

  rmSync(dir, { recursive: true });
  cpSync(backup, dir, { recursive: true });
  clock.advance(1_000);
  const restored = await startTestRelay({ dir, clock });
  assert.equal(restored.service.epoch, first.service.epoch, 'a file-copy restore keeps the epoch');
  const [a3, b3] = [a, b].map((h) => ({ ...testHost(restored, h.name, h.key), enc: h.enc })) as [TestHost, TestHost];
  const info = (await b3.api.info()).body['you'] as { head_seq: number };
  assert.equal(info.head_seq, before);
  assert.ok(info.head_seq < receivedThrough, 'the receiver sees the rewind through head_seq');
  const next = await pushAccepted(a3, b3, clock.now);
  assert.ok(next > receivedThrough, 'the seq floor keeps post-restore items above every checkpoint');
});
