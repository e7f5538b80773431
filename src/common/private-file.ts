import { closeSync, openSync } from 'node:fs';

/**
 * Creates an empty file readable by its owner only (SQLite gives its -wal/-shm/-journal files the
 * same mode). An existing file is left untouched, never opened: closing any descriptor of a file
 * drops every POSIX lock this process holds on it, SQLite's included.
 */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}
