/**
 * The errors of the SQLite effect ledger: {@link EffectError}s built by the factories here.
 *
 * @module
 */
import { EffectError } from '../errors.js';

/** The ledger operations, as its errors name them. */
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
 * Another connection held the database's lock past `busyTimeoutMs` (or, for a read, at all): `ledger-busy`.
 * Nothing was written. Retryable: the lock is usually released soon. @internal
 */
export function ledgerBusyError(
  operation: SqliteLedgerOperation,
  busyTimeoutMs: number,
  cause?: unknown,
): EffectError {
  return new EffectError(
    'ledger-busy',
    busyTimeoutMs > 0
      ? `SQLite effect ledger: ${operation} gave up after ${busyTimeoutMs} ms (busyTimeoutMs): another connection holds the database's lock`
      : `SQLite effect ledger: ${operation} found the database locked by another connection`,
    { retryable: true, cause, operation, busyTimeoutMs },
  );
}

/** `close()` was called while an operation waited for the lock: `ledger-closed`. Retryable. @internal */
export function ledgerClosedError(operation: SqliteLedgerOperation): EffectError {
  return new EffectError(
    'ledger-closed',
    `SQLite effect ledger: closed while ${operation} waited for the database's lock`,
    { retryable: true, operation },
  );
}

/**
 * The database cannot be written (`SQLITE_READONLY…`, `SQLITE_CANTOPEN…` as `driverCode`): `ledger-read-only`.
 * Not retryable: the file stays read-only until someone changes it. @internal
 */
export function ledgerReadOnlyError(
  operation: SqliteLedgerOperation,
  driverCode: string,
  cause?: unknown,
): EffectError {
  return new EffectError(
    'ledger-read-only',
    driverCode.startsWith('SQLITE_CANTOPEN')
      ? `SQLite effect ledger: ${operation} cannot write the database (${driverCode}): the file, or the -wal and -shm files that WAL mode keeps beside it, cannot be opened; is its directory read-only?`
      : `SQLite effect ledger: ${operation} cannot write the database (${driverCode}): the file or its directory is read-only, or the connection is read-only or query_only`,
    { retryable: false, cause, operation, driverCode },
  );
}
