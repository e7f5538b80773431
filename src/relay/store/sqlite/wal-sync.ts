// Making a commit durable off the event loop (issue 7). The writer connection runs WAL with
// synchronous=NORMAL, so SQLite's COMMIT only hands the WAL frames to the OS (a process crash loses
// nothing; the database can never be corrupted: SQLite still syncs around every checkpoint). What
// synchronous=FULL would add, an fsync of the WAL after each commit, the store does itself: it
// fdatasyncs the WAL file on the thread pool after a group's COMMIT and settles the group's
// transactions only when that sync has returned. The durability promised to callers is FULL's
// (nothing is answered before it is on disk); the event loop meanwhile parses, verifies and commits
// the next groups, and one sync covers every commit made before it started.
import { open, stat, type FileHandle } from 'node:fs/promises';
import { ioFailPoint } from '../../../failpoint.ts';

/** Makes everything committed so far durable. */
export interface WalSyncer {
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * fdatasync of `walPath` (relay.db-wal). The file is kept open; if it was replaced (another inode at
 * the path: SQLite deletes the WAL only when the last connection closes, but a sync must never go
 * to a stale file) it is opened again and synced.
 */
export function walFileSyncer(walPath: string): WalSyncer {
  let handle: FileHandle | null = null;
  let inode = 0;
  const reopen = async (): Promise<FileHandle> => {
    await handle?.close();
    handle = await open(walPath, 'r');
    inode = (await handle.stat()).ino;
    return handle;
  };
  return {
    async sync() {
      const file = handle ?? (await reopen());
      ioFailPoint('relay.wal-sync');
      await file.datasync();
      if ((await stat(walPath)).ino !== inode) await (await reopen()).datasync();
    },
    async close() {
      await handle?.close();
      handle = null;
    },
  };
}
