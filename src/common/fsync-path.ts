import { closeSync, constants, fsyncSync, openSync } from 'node:fs';

/** fsyncs a file, or a directory (which makes the names created or renamed in it durable). */
export function fsyncPath(path: string): void {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
