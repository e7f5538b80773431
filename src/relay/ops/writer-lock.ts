// The single-writer lock (design §2: "a single writer process"). A small SQLite file beside the
// store, opened with locking_mode=EXCLUSIVE and written once: SQLite then holds an exclusive OS
// lock on it until the connection closes, and the OS drops it when the process dies, however it
// dies. No pid files. The store itself (relay.db) stays openable by other processes (backup,
// operator reads) while the lock is held.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPrivateFile } from '../../common/private-file.ts';

export const WRITER_LOCK_FILE = 'relay.lock';
/** How often a waiting acquire tries again (the OS gives no wake-up for another process's lock). */
export const WRITER_LOCK_POLL_MS = 100;
const SQLITE_BUSY = 5;

export class WriterLockBusyError extends Error {
  override name = 'WriterLockBusyError';
  constructor(dir: string) {
    super(`another agentmbx relay is using the store in ${dir}`);
  }
}

export interface WriterLock {
  readonly dir: string;
  /** drops the lock (idempotent) */
  release(): void;
}

/** Takes the writer lock of the store in `dir`, waiting up to `waitMs` (default 0) for a holder to go. */
export async function acquireWriterLock(dir: string, options: { waitMs?: number } = {}): Promise<WriterLock> {
  const path = join(dir, WRITER_LOCK_FILE);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    createPrivateFile(path);
  } catch (error) {
    throw new Error(`cannot create the writer lock in ${dir}: ${(error as Error).message}`, { cause: error });
  }
  const deadline = Date.now() + (options.waitMs ?? 0);
  for (;;) {
    const db = tryLock(path, dir);
    if (db !== null)
      return {
        dir,
        release() {
          if (db.isOpen) db.close();
        },
      };
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new WriterLockBusyError(dir);
    await sleep(Math.min(WRITER_LOCK_POLL_MS, remaining));
  }
}

/** Whether some process (this one included) holds the writer lock of the store in `dir`. */
export function isWriterLockHeld(dir: string): boolean {
  const path = join(dir, WRITER_LOCK_FILE);
  if (!existsSync(path)) return false;
  const db = new DatabaseSync(path, { timeout: 0 });
  try {
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return false;
  } catch (error) {
    if (isBusy(error)) return true;
    throw lockError(dir, error);
  } finally {
    db.close();
  }
}

/** The locked connection, or null when another connection holds the lock. */
function tryLock(path: string, dir: string): DatabaseSync | null {
  const db = new DatabaseSync(path, { timeout: 0 });
  try {
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    // the write takes the exclusive lock; in EXCLUSIVE mode the commit keeps it until close
    db.exec('BEGIN EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS writer (id INTEGER PRIMARY KEY, acquired_at INTEGER NOT NULL)');
    db.prepare('INSERT OR REPLACE INTO writer (id, acquired_at) VALUES (1, ?)').run(Date.now());
    db.exec('COMMIT');
    return db;
  } catch (error) {
    db.close();
    if (isBusy(error)) return null;
    throw lockError(dir, error);
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown }).errcode;
  return typeof code === 'number' && (code & 0xff) === SQLITE_BUSY; // extended codes (BUSY_RECOVERY…) included
}

function lockError(dir: string, error: unknown): Error {
  return new Error(`cannot use the writer lock in ${dir}: ${(error as Error).message}`, { cause: error });
}
