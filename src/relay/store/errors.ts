// Why a relay store could not be opened, and how a running store refuses work, for every backend
// (each maps its own failures to these). Messages are one sentence for an operator; they name key
// fingerprints, never key text.
import { diskFaultSentence } from '../../common/disk-fault.ts';

/** A store that must not be used as it is: the relay refuses to start. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError';
}

/** The location holds something that is not a relay store (not SQLite, or SQLite without relay meta). */
export class NotARelayStoreError extends StoreOpenError {
  override name = 'NotARelayStoreError';
}

/** The store belongs to another relay key. */
export class StoreKeyMismatchError extends StoreOpenError {
  override name = 'StoreKeyMismatchError';
}

/** The store was written by a newer agentmbx. */
export class StoreSchemaTooNewError extends StoreOpenError {
  override name = 'StoreSchemaTooNewError';
}

/** Upgrading an older store failed; the store was left as it was. */
export class StoreMigrationError extends StoreOpenError {
  override name = 'StoreMigrationError';
}

/** A transaction asked of a store that is closing or closed. */
export class StoreClosedError extends Error {
  override name = 'StoreClosedError';
  constructor(message = 'the relay store is closed', options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * A store whose lock this process lost (PostgreSQL: the lock's connection ended): an offline
 * operation may run meanwhile, so the store refuses every read and write until it holds the lock again.
 */
export class StoreLockLostError extends Error {
  override name = 'StoreLockLostError';
}

/** More transactions are waiting than the queue holds (MAX_QUEUED_TRANSACTIONS, sql/group-runner.ts). */
export class StoreOverloadedError extends Error {
  override name = 'StoreOverloadedError';
  constructor() {
    super('the relay store is overloaded: too many transactions are waiting');
  }
}

/** A reader or transactor used after its transaction ended, or a transaction opened inside another one. */
export class TransactionMisuseError extends Error {
  override name = 'TransactionMisuseError';
}

/**
 * What the disk did to a store write: full (no space left) and io (an I/O error, or a file system
 * turned read-only) heal by themselves once a write commits again; sync (a failed fsync of the WAL:
 * what was committed may not be on disk) lasts until the relay is restarted.
 */
export type StoreDiskFault = 'full' | 'io' | 'sync';

/** A write (or, after a failed sync, any transaction) the store refused because of its disk. */
export class StoreDiskError extends Error {
  override name = 'StoreDiskError';
  readonly fault: StoreDiskFault;
  /** the message says the free space on `dir`, never the path (it goes to clients of /healthz) */
  constructor(fault: StoreDiskFault, dir: string, options?: ErrorOptions) {
    super(storeFaultSentence(fault, dir), options);
    this.fault = fault;
  }
}

function storeFaultSentence(fault: StoreDiskFault, dir: string): string {
  if (fault === 'sync') return 'the relay store could not sync its log to disk: check the disk, then restart the relay';
  const disk = 'the disk holding the relay store';
  return fault === 'full'
    ? diskFaultSentence('full', { disk, freeOn: dir, afterwards: '; writes resume by themselves' })
    : diskFaultSentence('io', { disk, fixHint: ' (or remount it read-write if it turned read-only)', afterwards: '; writes resume once one succeeds' });
}
