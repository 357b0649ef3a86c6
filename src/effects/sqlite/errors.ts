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

/**
 * The database cannot be written: SQLite said `SQLITE_READONLY…`, or `SQLITE_CANTOPEN…` for a file it could not
 * open. The causes: a file or a directory that is read-only (a file mode, `chattr +i`, a read-only mount; in WAL
 * mode SQLite must also create the `-wal` and `-shm` files beside the database, so its directory must be writable),
 * a database passed in that was opened with `readonly: true` or has `PRAGMA query_only` on, or a file that was moved
 * or deleted while open. (`SQLITE_CANTOPEN` is also what SQLite says when the process has no file handle left.)
 * Raised at open (the table cannot be created, the WAL files cannot be made) or at the first write (a claim of a
 * key the ledger does not hold): nothing was written, and no handler runs without its claim. What the ledger
 * already holds is still read and replayed. Not retryable: the file stays read-only until someone changes it.
 */
export class LedgerReadOnlyError extends CleanturnError {
  /** What the ledger was doing. */
  readonly operation: SqliteLedgerOperation;
  /** SQLite's error code (`SQLITE_READONLY`, `SQLITE_READONLY_DBMOVED`, `SQLITE_CANTOPEN`…). */
  readonly code: string;

  constructor(operation: SqliteLedgerOperation, code: string, cause?: unknown) {
    super(
      code.startsWith('SQLITE_CANTOPEN')
        ? `SQLite effect ledger: ${operation} cannot write the database (${code}): the file, or the -wal and -shm files that WAL mode keeps beside it, cannot be opened; is its directory read-only?`
        : `SQLite effect ledger: ${operation} cannot write the database (${code}): the file or its directory is read-only, or the connection is read-only or query_only`,
      { retryable: false, cause },
    );
    this.operation = operation;
    this.code = code;
  }
}
