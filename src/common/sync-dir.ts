// fsync of a directory: makes a file created, renamed or linked in it durable (the file's own
// fsync does not cover its directory entry).
import { closeSync, constants, fsyncSync, openSync } from 'node:fs';

export function syncDirectory(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
