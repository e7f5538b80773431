// Naming a disk fault under a host's home (issue 18): the CLI's error line, doctor and the daemon say
// "the disk holding <home> is full" or "… is read-only" with the free space and the fix, instead of
// SQLite's "disk I/O error" or "unable to open database file". A refused write leaves nothing
// half-written (every store write is one transaction), so the fix is always "make room, try again".
import { accessSync, constants } from 'node:fs';
import { diskFaultOf, diskFaultSentence, freeBytes, sqliteResultCode, type DiskFault } from '../../common/disk-fault.ts';

/**
 * Below this much free space the disk holding a home counts as full: SQLite needs room for the WAL
 * and its index beside host.db, and a message with its rows takes some KiB.
 */
export const HOME_DISK_FULL_BELOW_BYTES = 1024 * 1024;

/**
 * SQLite's primary result codes that may mean a read-only or full disk (a file it could not open or
 * write: host.db, its -wal or -shm), or something else: the file system is asked which.
 */
const SQLITE_READONLY = 8;
const SQLITE_CANTOPEN = 14;
const ASK_THE_DISK = new Set([SQLITE_READONLY, SQLITE_CANTOPEN]);

/** What the file system holding `home` does now: full, read-only, or null when it takes writes (or cannot be asked). */
export function homeDiskState(home: string): Exclude<DiskFault, 'io'> | null {
  try {
    accessSync(home, constants.W_OK);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EROFS') return 'read-only';
  }
  const free = freeBytes(home);
  return free !== null && free < HOME_DISK_FULL_BELOW_BYTES ? 'full' : null;
}

/** The sentence for a disk fault under `home`: what it is, the free space, and what to do. */
export function diskFaultText(fault: DiskFault, home: string): string {
  return diskFaultSentence(fault, {
    disk: `the disk holding ${home}`,
    freeOn: home,
    afterwards: ', then try again (nothing was half-written)',
    ...(fault === 'read-only' ? { fixHint: ' (or point MBX_HOME elsewhere)' } : {}),
  });
}

/**
 * `error` named as a disk fault under `home`, or null when the disk did not cause it. SQLite's
 * words are vague ("disk I/O error" on a full disk, "unable to open database file" or "attempt to
 * write a readonly database" on a read-only one), so the file system itself is asked which it is.
 */
export function nameDiskError(error: unknown, home: string): string | null {
  const fault = diskFaultOf(error);
  if (fault === null && !ASK_THE_DISK.has(sqliteResultCode(error) ?? 0)) return null;
  const state = fault === 'full' ? 'full' : (homeDiskState(home) ?? fault);
  return state === null ? null : diskFaultText(state, home);
}
