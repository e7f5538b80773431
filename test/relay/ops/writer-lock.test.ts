import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { backup, DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { acquireWriterLock, isWriterLockHeld, WRITER_LOCK_FILE, WriterLockBusyError } from '../../../src/relay/ops/writer-lock.ts';
import { readStoreMeta, RELAY_DB_FILE } from '../../../src/relay/store/sqlite/index.ts';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import { spawnNode, tempDir } from '../../helpers/processes.ts';

const CHILD = join(import.meta.dirname, 'fixtures', 'writer-lock-child.ts');
const RELAY_KEY = generateSigningKey().publicKey;

async function holder(dir: string) {
  const child = spawnNode([CHILD, 'hold', dir, RELAY_KEY]);
  await child.waitForLine(/^holding$/);
  return child;
}

async function tryFromAnotherProcess(dir: string): Promise<string> {
  const child = spawnNode([CHILD, 'try', dir]);
  const line = await child.waitForLine(/^(acquired|busy)$/);
  await child.exited;
  return line;
}

test('a lock held by another process refuses; the store stays readable; SIGKILL frees the lock', async () => {
  const dir = join(tempDir(), 'store');
  const child = await holder(dir);
  assert.equal(isWriterLockHeld(dir), true);
  await assert.rejects(
    acquireWriterLock(dir),
    (error: unknown) => error instanceof WriterLockBusyError && error.message === `another agentmbx relay is using the store in ${dir}`,
  );

  // relay.db itself stays open to other processes: operator reads and online backups
  assert.equal(readStoreMeta(dir).relayPubkey, RELAY_KEY);
  const copyDir = tempDir();
  const source = new DatabaseSync(join(dir, RELAY_DB_FILE), { readOnly: true });
  await backup(source, join(copyDir, RELAY_DB_FILE));
  source.close();
  assert.deepEqual(readStoreMeta(copyDir), readStoreMeta(dir));

  child.kill('SIGKILL');
  await child.exited;
  assert.equal(isWriterLockHeld(dir), false);
  const lock = await acquireWriterLock(dir);
  assert.equal(isWriterLockHeld(dir), true);
  lock.release();
  lock.release();
  assert.equal(isWriterLockHeld(dir), false);
  (await acquireWriterLock(dir)).release();
});

test('acquire waits up to waitMs and gets the lock once the holder dies', async () => {
  const dir = join(tempDir(), 'store');
  const child = await holder(dir);
  let settled = false;
  const waiting = acquireWriterLock(dir, { waitMs: 60_000 }).finally(() => {
    settled = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, false);
  child.kill('SIGKILL');
  await child.exited;
  const lock = await waiting;
  lock.release();
});

test('probing the lock from the holding process does not drop it', async () => {
  const dir = join(tempDir(), 'store');
  const lock = await acquireWriterLock(dir);
  assert.equal(isWriterLockHeld(dir), true);
  await assert.rejects(acquireWriterLock(dir), WriterLockBusyError);
  assert.equal(await tryFromAnotherProcess(dir), 'busy');
  lock.release();
  assert.equal(await tryFromAnotherProcess(dir), 'acquired');
});

test('a store directory without a lock file is not locked, and checking creates nothing', async () => {
  const dir = tempDir();
  assert.equal(isWriterLockHeld(dir), false);
  assert.equal(isWriterLockHeld(join(dir, 'missing')), false);
  assert.equal(existsSync(join(dir, WRITER_LOCK_FILE)), false);
});
