// What a failing disk looks like through node:sqlite and node:fs, and how much room a disk has
// left. The relay's store and the host's CLI both name disk faults from these, so that a full disk
// reads as a full disk and not as "internal error".
import { statfsSync } from 'node:fs';

/** full: no space (or quota) left; read-only: the file system refuses writes; io: the device failed a read or write. */
export type DiskFault = 'full' | 'read-only' | 'io';

// SQLite primary result codes (the low byte of an extended code such as SQLITE_IOERR_WRITE).
// SQLITE_READONLY is not among them: a query_only connection asked to write raises it too.
const SQLITE_IOERR = 10;
const SQLITE_FULL = 13;
const SQLITE_FAULTS = new Map<number, DiskFault>([
  [SQLITE_FULL, 'full'],
  [SQLITE_IOERR, 'io'],
]);
const ERRNO_FAULTS = new Map<string, DiskFault>([
  ['ENOSPC', 'full'],
  ['EDQUOT', 'full'],
  ['EROFS', 'read-only'],
  ['EIO', 'io'],
]);
/** How many `cause` links are followed (a cycle must not loop). */
const MAX_CAUSE_DEPTH = 8;

/** The first answer `pick` gives for `error` or one of its causes, or null. */
function inCauses<T>(error: unknown, pick: (error: { errcode?: unknown; code?: unknown }) => T | undefined): T | null {
  let current: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && typeof current === 'object' && current !== null; depth += 1) {
    const found = pick(current as { errcode?: unknown; code?: unknown });
    if (found !== undefined) return found;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** SQLite's primary result code behind `error` (or one of its causes), or null when SQLite did not raise it. */
export function sqliteResultCode(error: unknown): number | null {
  return inCauses(error, ({ errcode }) => (typeof errcode === 'number' ? errcode & 0xff : undefined));
}

/** The disk fault behind `error` (or behind one of its causes), or null when it is not one. */
export function diskFaultOf(error: unknown): DiskFault | null {
  return inCauses(
    error,
    ({ errcode, code }) =>
      (typeof errcode === 'number' ? SQLITE_FAULTS.get(errcode & 0xff) : undefined) ?? (typeof code === 'string' ? ERRNO_FAULTS.get(code) : undefined),
  );
}

/** Bytes an unprivileged writer may still use on the file system holding `path`, or null when it cannot be asked. */
export function freeBytes(path: string): number | null {
  try {
    const stats = statfsSync(path);
    return stats.bavail * stats.bsize;
  } catch {
    return null;
  }
}

/** "0 bytes", "12 KiB", "3.5 MiB", "20.1 GiB": for messages. */
export function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** "12 KiB free", or "free space unknown" when the file system cannot be asked. */
export function freeSpaceText(path: string): string {
  const free = freeBytes(path);
  return free === null ? 'free space unknown' : `${bytesText(free)} free`;
}

/** What each fault is, said of a disk, and the first thing an operator does about it. */
const FAULT_WORDS: Record<DiskFault, { state: string; fix: string }> = {
  full: { state: 'is full', fix: 'free some space on it' },
  'read-only': { state: 'is read-only', fix: 'remount it read-write' },
  io: { state: 'failed a read or write (I/O error)', fix: 'check the disk' },
};

/**
 * The one sentence every part of agentmbx uses for a disk fault: "<disk> is full (<free>): free
 * some space on it<fixHint><afterwards>". `disk` names the disk ("the disk", "the disk holding ~/x"),
 * a full one also says the free space on `freeOn` (a path on it), `fixHint` follows the fix, and
 * `afterwards` says what happens after it (", then try again").
 */
export function diskFaultSentence(fault: DiskFault, words: { disk: string; freeOn?: string; fixHint?: string; afterwards: string }): string {
  const { state, fix } = FAULT_WORDS[fault];
  const free = fault === 'full' && words.freeOn !== undefined ? ` (${freeSpaceText(words.freeOn)})` : '';
  return `${words.disk} ${state}${free}: ${fix}${words.fixHint ?? ''}${words.afterwards}`;
}
