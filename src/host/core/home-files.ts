// Files in the host home: created private (0700 dirs, 0600 files) and refused when they are
// symlinks, not ours, or readable by others. Writes are atomic (temp file, fsync, rename).
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, writeSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { fsyncPath } from '../../common/fsync-path.ts';
import { HostError } from './host-error.ts';

export class HomeError extends HostError {}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new HomeError(`cannot read ${path}: ${(err as Error).message}`);
  }
}

function checkPrivate(path: string, st: Stats, what: 'directory' | 'file'): void {
  if (st.isSymbolicLink()) throw new HomeError(`${path} is a symlink: refusing it (replace it with a real ${what})`);
  if (what === 'directory' ? !st.isDirectory() : !st.isFile()) throw new HomeError(`${path} is not a ${what}`);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) throw new HomeError(`${path} belongs to another user`);
  if ((st.mode & 0o077) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(3, '0');
    throw new HomeError(`${path} is too open (mode ${mode}): run chmod ${what === 'directory' ? '700' : '600'} ${path}`);
  }
}

/** Checks a private directory; false when it does not exist. */
export function checkPrivateDir(path: string): boolean {
  const st = lstatOrNull(path);
  if (st === null) return false;
  checkPrivate(path, st, 'directory');
  return true;
}

/** Creates a 0700 directory (and its parents) unless it exists; then checks it. */
export function ensurePrivateDir(path: string): void {
  if (lstatOrNull(path) === null) mkdirSync(path, { recursive: true, mode: 0o700 });
  checkPrivateDir(path);
}

/** Reads a private file; null when it does not exist. */
export function readPrivateFile(path: string): string | null {
  const st = lstatOrNull(path);
  if (st === null) return null;
  checkPrivate(path, st, 'file');
  return readFileSync(path, 'utf8');
}

/** Checks a private file without reading it; false when it does not exist. */
export function checkPrivateFile(path: string): boolean {
  const st = lstatOrNull(path);
  if (st === null) return false;
  checkPrivate(path, st, 'file');
  return true;
}

/** Writes a 0600 file atomically: a crash leaves either the old or the new content. */
export function writePrivateFile(path: string, content: string): void {
  const tmp = join(dirname(path), `.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncPath(dirname(path));
}
