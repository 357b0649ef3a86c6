import { CleanturnError, describeError } from 'cleanturn';

/** What the ledger was doing when PostgreSQL failed. */
export type PostgresLedgerOperation =
  | 'create table'
  | 'claim'
  | 'renew'
  | 'complete'
  | 'fail'
  | 'release'
  | 'get'
  | 'purge';

/**
 * A PostgreSQL query of the ledger failed. Whether the effect's record was written is unknown only for a
 * connection failure in the middle of a write; the ledger's rules make a retry safe either way (a second claim
 * finds the first, a second `complete` with the same token overwrites its own record).
 *
 * `retryable` is true for connection failures (refused, reset, terminated, pool timeout, SQLSTATE class 08,
 * server shutdown or start-up, too many connections, a cancelled statement, a deadlock or serialization
 * failure), false for the rest (a missing table with `createTable: false`, a table of another shape, missing
 * privileges, bad credentials).
 */
export class PostgresLedgerError extends CleanturnError {
  /** The ledger operation that failed. */
  readonly operation: PostgresLedgerOperation;
  /** The SQLSTATE (`08006`, `42P01`…) or the socket error code (`ECONNREFUSED`…), when the driver gave one. */
  readonly code: string | undefined;

  constructor(operation: PostgresLedgerOperation, cause: unknown) {
    const code = errorCode(cause);
    const hint = HINTS[code ?? ''];
    super(
      `postgres effect ledger: ${operation} failed: ${describeError(cause)}${code === undefined ? '' : ` (${code})`}${hint === undefined ? '' : `; ${hint}`}`,
      { retryable: isConnectionFailure(cause, code), cause },
    );
    this.operation = operation;
    this.code = code;
  }
}

/**
 * The ledger was used wrongly: an option that is not valid (a table name that is not a plain identifier, a
 * retention or lease that is not a positive number of milliseconds, a `pool` without `query`) or a scope or key
 * that PostgreSQL `text` cannot hold (a NUL character, a lone surrogate). Never retryable: nothing was sent.
 */
export class PostgresLedgerUsageError extends CleanturnError {
  /** The option or argument at fault (`table`, `retentionMs`, `leaseMs`, `pool`, `scope`, `key`). */
  readonly option: string;

  constructor(option: string, problem: string) {
    super(`postgres effect ledger: ${option}: ${problem}`, { retryable: false });
    this.option = option;
  }
}

/** Socket error codes of Node.js that mean the connection failed or broke. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** SQLSTATEs outside class 08 after which the same query can succeed on a new try. */
const RETRYABLE_SQLSTATES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '53000', // insufficient_resources
  '53100', // disk_full
  '53200', // out_of_memory
  '53300', // too_many_connections
  '55P03', // lock_not_available
  '57014', // query_canceled (statement_timeout)
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up)
]);

/**
 * What node-postgres says, without a code, when a connection breaks or cannot be had: the socket ended mid-query,
 * the pool's `connectionTimeoutMillis` ran out, a client that had a connection error was used again.
 */
const DRIVER_CONNECTION_MESSAGE =
  /connection terminated|timeout exceeded when trying to connect|connection error|not queryable|query read timeout/i;

/** Hints for the non-retryable failures people meet first. */
const HINTS: Record<string, string> = {
  '42P01': 'the table does not exist: create it (see the PostgresEffectLedger docs) or leave createTable on',
  '42703': 'the table exists with other columns: give the ledger a table of its own',
  '42501':
    'the database user lacks a privilege on the table (SELECT, INSERT, UPDATE, DELETE; CREATE to create it)',
};

function errorCode(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && code !== '' ? code : undefined;
}

function isConnectionFailure(error: unknown, code: string | undefined): boolean {
  if (code !== undefined) {
    return code.startsWith('08') || RETRYABLE_SQLSTATES.has(code) || SOCKET_CODES.has(code);
  }
  // A connection refused while the pool connects can come as an AggregateError (one per address tried).
  if (error instanceof AggregateError) return error.errors.some((e) => isConnectionFailure(e, errorCode(e)));
  return error instanceof Error && DRIVER_CONNECTION_MESSAGE.test(error.message);
}
