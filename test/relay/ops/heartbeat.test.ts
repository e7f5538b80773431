// The heartbeat and the start-up epoch rule (design §5, protocol.md §6, §7.14), with an injected clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { HEARTBEAT_MAX_AHEAD_MS, HEARTBEAT_STALE_MS, staleHeartbeatReason } from '../../../src/relay/ops/heartbeat.ts';
import { readStoreMeta } from '../../../src/relay/store/sqlite/index.ts';
import { readOpsLogOfStore } from '../../../src/relay/store/sqlite/store-files.ts';
import { startTestRelay } from '../../helpers/relay-fixture.ts';
import { TestClock } from '../../helpers/clock.ts';
import { tempDir } from '../../helpers/processes.ts';

test('the rule: older than 10 minutes or more than 1 minute ahead rotates; none (a new store) does not', () => {
  const now = 1_000_000_000;
  assert.equal(staleHeartbeatReason(null, now), null);
  assert.equal(staleHeartbeatReason(now - HEARTBEAT_STALE_MS, now), null);
  assert.match(staleHeartbeatReason(now - HEARTBEAT_STALE_MS - 1, now) ?? '', /heartbeat is 600 s old/);
  assert.equal(staleHeartbeatReason(now + HEARTBEAT_MAX_AHEAD_MS, now), null);
  assert.match(staleHeartbeatReason(now + HEARTBEAT_MAX_AHEAD_MS + 1, now) ?? '', /ahead of the clock/);
});

async function restartAfter(moveMs: number) {
  const dir = tempDir();
  const clock = new TestClock();
  const first = await startTestRelay({ dir, clock });
  assert.equal(first.service.epochRotatedAtStart, null, 'a new store has no heartbeat yet');
  assert.equal(readStoreMeta(dir).heartbeatAt, clock.now, 'the first heartbeat is written at start');
  await first.stop();
  clock.advance(moveMs);
  const second = await startTestRelay({ dir, clock });
  await second.stop();
  return { dir, first: first.service, second: second.service };
}

test('a restart within 10 minutes keeps the epoch', async () => {
  const { first, second, dir } = await restartAfter(HEARTBEAT_STALE_MS);
  assert.equal(second.epoch, first.epoch);
  assert.equal(second.epochRotatedAtStart, null);
  assert.deepEqual(readOpsLogOfStore(dir, 10), []);
});

test('a stale heartbeat at start rotates the epoch and logs why', async () => {
  const { first, second, dir } = await restartAfter(HEARTBEAT_STALE_MS + 1);
  assert.notEqual(second.epoch, first.epoch);
  assert.deepEqual(second.epochRotatedAtStart, { from: first.epoch, to: second.epoch, reason: 'the last heartbeat is 600 s old' });
  const [entry] = readOpsLogOfStore(dir, 10);
  assert.equal(entry?.kind, 'epoch-rotated');
  assert.deepEqual(entry?.detail, { reason: 'the last heartbeat is 600 s old', from: first.epoch, to: second.epoch, heartbeat_at: new TestClock().now });
});

test('a heartbeat ahead of the clock at start rotates the epoch', async () => {
  const { first, second } = await restartAfter(-HEARTBEAT_MAX_AHEAD_MS - 1);
  assert.notEqual(second.epoch, first.epoch);
  assert.match(second.epochRotatedAtStart?.reason ?? '', /60 s ahead of the clock/);
});

test('a running relay writes its heartbeat on every interval', async () => {
  const clock = new TestClock();
  const dir = tempDir();
  const relay = await startTestRelay({ dir, clock, heartbeatIntervalMs: 10 });
  for (const step of [1_000, 2_000]) {
    clock.advance(step);
    // wait for the timer to write the moved clock (bounded: the interval is 10 ms)
    for (let i = 0; i < 500 && readStoreMeta(dir).heartbeatAt !== clock.now; i += 1) await sleep(10);
    assert.equal(readStoreMeta(dir).heartbeatAt, clock.now);
  }
  await relay.stop();
});
