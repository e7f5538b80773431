// Which read gets the next connection of a PostgreSQL relay's pool (read-slots.ts): never the
// writer's, woken held pulls first, held pulls' own reads last and on half the slots at most, and a
// read that waits too long, or finds too many waiting, is refused as overloaded (503 STORE_BUSY).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreOverloadedError } from '../../../src/relay/store/errors.ts';
import { MAX_WAITING_READS, ReadSlots } from '../../../src/relay/store/postgres/read-slots.ts';
import type { ReadPriority } from '../../../src/relay/store/relay-store.ts';

const settle = () => new Promise((resolve) => setImmediate(resolve));

test("reads take every connection but the writer's; held pulls' reads half of those; a freed slot goes to woken, then ordinary, then held", async () => {
  // 5 connections: 4 read slots, 2 of them for held pulls' reads
  const slots = new ReadSlots(5, 60_000);
  const held = [await slots.take('held'), await slots.take('held')];
  const granted: string[] = [];
  const waiting = (priority: ReadPriority, name: string) =>
    slots.take(priority).then((release) => {
      granted.push(name);
      return release;
    });
  const thirdHeld = waiting('held', 'held 3');
  await settle();
  assert.deepEqual(granted, [], 'a third held read waits though two slots are free');
  const ordinary = [await slots.take('ordinary'), await slots.take('ordinary')];
  const queued = [waiting('ordinary', 'ordinary 3'), waiting('woken', 'woken 1'), waiting('held', 'held 4')];
  await settle();
  assert.deepEqual(granted, [], "all four slots taken: the fifth connection is the writer's");
  ordinary[0]?.();
  await settle();
  assert.deepEqual(granted, ['woken 1'], 'the woken read first, though it came after');
  ordinary[1]?.();
  await settle();
  assert.deepEqual(granted, ['woken 1', 'ordinary 3']);
  held[0]?.();
  await settle();
  assert.deepEqual(granted, ['woken 1', 'ordinary 3', 'held 3'], 'a held read waits for a held slot');
  held[0]?.();
  await settle();
  assert.equal(granted.length, 3, 'a slot given back twice is given back once');
  const [ordinaryThird, woken, heldFourth] = queued;
  for (const release of await Promise.all([ordinaryThird, woken])) release?.();
  await settle();
  assert.deepEqual(granted, ['woken 1', 'ordinary 3', 'held 3'], 'two held reads run: the fourth waits with slots free');
  (await thirdHeld)();
  (await heldFourth)?.();
  assert.deepEqual(granted, ['woken 1', 'ordinary 3', 'held 3', 'held 4']);
  held[1]?.();
});

test('a read that waits past the checkout timeout, or finds MAX_WAITING_READS waiting, is refused as overloaded', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const slots = new ReadSlots(2, 1_000);
  const only = await slots.take('ordinary');
  const late = slots.take('ordinary');
  t.mock.timers.tick(1_000);
  await assert.rejects(late, StoreOverloadedError);
  const fill = Array.from({ length: MAX_WAITING_READS }, () => slots.take('held'));
  await assert.rejects(slots.take('woken'), StoreOverloadedError);
  t.mock.timers.tick(1_000);
  for (const waiter of fill) await assert.rejects(waiter, StoreOverloadedError);
  only();
  const next = await slots.take('ordinary');
  next();
});
