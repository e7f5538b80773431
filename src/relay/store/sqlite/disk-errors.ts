// SQLite's and the file system's disk failures as the store's StoreDiskError.
import { diskFaultOf } from '../../../common/disk-fault.ts';
import { StoreDiskError } from '../errors.ts';

/** `error` as a StoreDiskError when the disk caused it (SQLITE_FULL, SQLITE_IOERR, ENOSPC, EIO…), else null. */
export function storeDiskError(error: unknown, dir: string): StoreDiskError | null {
  if (error instanceof StoreDiskError) return error;
  const fault = diskFaultOf(error);
  if (fault === null) return null;
  return new StoreDiskError(fault === 'full' ? 'full' : 'io', dir, { cause: error });
}
