// Why a relay store could not be opened, and how a running store refuses work. Messages are one
// sentence for an operator; they name key fingerprints, never key text.

/** A store that must not be used as it is: the relay refuses to start. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError';
}

/** The file is not SQLite, or is SQLite without relay meta. */
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

/** More transactions are waiting than the queue holds (see MAX_QUEUED_TRANSACTIONS). */
export class StoreOverloadedError extends Error {
  override name = 'StoreOverloadedError';
  constructor() {
    super('the relay store is overloaded: too many transactions are waiting');
  }
}

/** A RelayTx used after its transaction ended, or a transaction opened inside another one. */
export class TransactionMisuseError extends Error {
  override name = 'TransactionMisuseError';
}
