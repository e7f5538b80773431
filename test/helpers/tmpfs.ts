// A small tmpfs the test mounts itself, so that a disk fills (and is grown again) for real: the
// store sees the same ENOSPC a full disk gives. Needs root and mount(8); elsewhere the tests that
// use it are skipped with the reason. Unmounted after the test file, also when a test failed (the
// child processes using it are killed first: processes.ts registered its own `after` earlier).
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import './processes.ts';

export const MiB = 1024 * 1024;

export interface Tmpfs {
  dir: string;
  /** `mount -o remount,size=<bytes>`: grows the disk (or shrinks it down to what is used) */
  resize(bytes: number): void;
  /** `mount -o remount,<ro|rw>` */
  setReadOnly(readOnly: boolean): void;
  /** writes a filler file until the disk refuses (ENOSPC): no byte is left free */
  fill(): void;
}

/** One page: tmpfs hands out space in pages, so this leaves none free. */
const FILL_CHUNK_BYTES = 4096;

function fillUp(path: string): void {
  const fd = openSync(path, 'a');
  const chunk = Buffer.alloc(FILL_CHUNK_BYTES, 0x61);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

function mount(args: string[]): void {
  execFileSync('mount', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'ignore' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' }); // still busy: detach it now, free it when the last user goes
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Mounts a fresh tmpfs of `sizeBytes` on a unique temporary folder. */
export function mountTmpfs(sizeBytes: number): Tmpfs {
  const dir = mkdtempSync(join(tmpdir(), 'agentmbx-tmpfs-'));
  try {
    mount(['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0700`, 'tmpfs', dir]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  after(() => unmount(dir));
  return {
    dir,
    resize: (bytes) => mount(['-o', `remount,size=${bytes}`, dir]),
    setReadOnly: (readOnly) => mount(['-o', `remount,${readOnly ? 'ro' : 'rw'}`, dir]),
    fill: () => fillUp(join(dir, 'filler')),
  };
}

/** Why a test cannot mount a tmpfs here (for `test(…, { skip })`), or false when it can. */
export function tmpfsSkipReason(): string | false {
  if (process.platform !== 'linux') return 'tmpfs disk-fault tests need Linux';
  if (process.getuid?.() !== 0) return 'tmpfs disk-fault tests need root (to mount a small tmpfs)';
  const dir = mkdtempSync(join(tmpdir(), 'agentmbx-tmpfs-probe-'));
  try {
    mount(['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir]);
    unmount(dir);
    return false;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
  }
}
