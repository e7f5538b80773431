import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { openSqliteRelayStore } from '../../../src/relay/store/sqlite/index.ts';
import { spawnNode, tempDir } from '../../helpers/processes.ts';
import { RELAY_KEY } from './store-fixtures.ts';

test('after a SIGKILL, committed items are there and an open transaction left nothing', async () => {
  const dir = join(tempDir(), 'store');
  const child = spawnNode([join(import.meta.dirname, 'fixtures', 'crash-mid-transaction.ts'), dir, RELAY_KEY]);
  const committed = await child.waitForLine(/^committed \d+$/);
  await child.waitForLine(/^open$/);
  child.kill('SIGKILL');
  await child.exited;
  const store = await openSqliteRelayStore({ dir, relayPubkey: RELAY_KEY });
  const [page, head] = await store.transaction(async (tx) => [await tx.items.pull('T', 0, 10, 10_000), await tx.items.headSeq('T')] as const);
  assert.deepEqual(
    page.items.map((i) => `committed ${i.seq}`),
    [committed],
  );
  assert.equal(`committed ${head}`, committed, 'the in-flight seq was never allocated');
  assert.equal(new TextDecoder().decode(page.items[0]?.wire), 'durable');
  await store.close();
});
