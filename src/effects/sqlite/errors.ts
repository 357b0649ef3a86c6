/**
 * Typed errors of the SQLite effect ledger.
 *
 * @module
 */
import { CleanturnError } from 'cleanturn';

/** The ledger operations that write, and so may wait for SQLite's write lock. */
export type SqliteLedgerOperation =
  | 'claim'
  | 'complete'
  | 'fail'
  | 'release'
  | 'renew'
  | 'purge'
  | 'get'
  | 'seen'
  | 'open';

/**
 * Another connection held the database's lock past the ledger's `busyTimeoutMs` (a backup, a migration, a long
 * transaction of another program on the same file). Nothing was written: whether the effect ran is as it was.
 * Retryable: the lock is usually released soon.
 */
export class LedgerBusyError extends CleanturnError {
  /** What the ledger was doing. */
  readonly operation: SqliteLedgerOperation;
  /** How long it waited for the lock, in milliseconds (0 for a read, which never waits). */
  readonly busyTimeoutMs: number;

  constructor(operation: SqliteLedgerOperation, busyTimeoutMs: number, cause?: unknown) {
    super(
      busyTimeoutMs > 0
        ? `SQLite effect ledger: ${operation} gave up after ${busyTimeoutMs} ms (busyTimeoutMs): another connection holds the database's lock`
        : `SQLite effect ledger: ${operation} found the database locked by another connection`,
      { retryable: true, cause },
    );
    this.operation = operation;
    this.busyTimeoutMs = busyTimeoutMs;
  }
}

/**
 * `close()` was called while an operation waited for the database's lock. Nothing was written. Retryable: another
 * ledger (after a restart) can do it.
 */
export class LedgerClosedError extends CleanturnError {
  /** What the ledger was waiting to do. */
  readonly operation: SqliteLedgerOperation;

  constructor(operation: SqliteLedgerOperation) {
    super(`SQLite effect ledger: closed while ${operation} waited for the database's lock`, {
      retryable: true,
    });
    this.operation = operation;
  }
}
