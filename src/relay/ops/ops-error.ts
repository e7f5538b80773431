import { acquireWriterLock, WriterLockBusyError, type WriterLock } from './writer-lock.ts';

/** A refusal of an operator command (backup, restore, rotate-epoch, log): one sentence saying what to do. */
export class RelayOpsError extends Error {
  override name = 'RelayOpsError';
}

/** The writer lock for an offline operation, refused with `advice` while a relay serves the store. */
export async function lockForOfflineOperation(storeDir: string, advice: string): Promise<WriterLock> {
  try {
    return await acquireWriterLock(storeDir);
  } catch (error) {
    if (error instanceof WriterLockBusyError) throw new RelayOpsError(`a relay is serving the store in ${storeDir}: ${advice}`);
    throw error;
  }
}
