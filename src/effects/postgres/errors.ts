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
 * A PostgreSQL query of the ledger failed. A claim never leaves its outcome unknown behind this error: whatever
 * it rejects with, nobody holds the key for it (see {@link PostgresOutcomeUnknownError} for the one exception,
 * which says so). Of the other writes, only one whose connection failed mid-query, or that got no answer in time,
 * may have been applied (the message says so); the ledger's rules make a retry with the same token safe either
 * way (a second `complete` with the same token overwrites its own record, a second `release` finds nothing).
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

  /**
   * @param operation What the ledger was doing.
   * @param cause What the driver threw.
   * @param note What the ledger knows of the write's outcome, for the message.
   */
  constructor(operation: PostgresLedgerOperation, cause: unknown, note?: string) {
    const code = errorCode(cause);
    const hint = HINTS[code ?? ''];
    super(
      `postgres effect ledger: ${operation} failed: ${describeError(cause)}${code === undefined ? '' : ` (${code})`}${note === undefined ? '' : `; ${note}`}${hint === undefined ? '' : `; ${hint}`}`,
      { retryable: isConnectionFailure(cause, code), cause },
    );
    this.operation = operation;
    this.code = code;
  }
}

/**
 * A claim got no answer (none within `queryTimeoutMs`, or its connection broke mid-query), and the ledger could
 * not find out whether it was applied: the server could not be reached in time to end the claim's session and
 * read the record back, or the ledger cannot end sessions there (`pool` is not a `pg.Pool`, a pooler such as
 * PgBouncer stands between, the database user lacks the privilege).
 *
 * Nobody was told `claimed`, so the effect was not run, and it cannot run twice because of this claim: if the
 * claim was (or is yet) applied, it holds the key under `token`, and the next claim of the key through the same
 * ledger takes it up (answers `claimed` with that token); any other ledger finds it `in-progress` until its lease
 * ends, then takes it over with `reclaimed: true`, as after a crash. Retryable.
 */
export class PostgresOutcomeUnknownError extends PostgresLedgerError {
  /** The ledger scope (turn id). */
  readonly scope: string;
  /** The effect key. */
  readonly key: string;
  /** The fencing token the claim holds the key under, if it was applied. */
  readonly token: string;

  constructor(scope: string, key: string, token: string, cause: unknown) {
    super(
      'claim',
      cause,
      `whether the claim of ${key} in ${scope} was applied is unknown; the effect was not run, and the next claim of the key through this ledger takes the claim up if it was applied`,
    );
    this.scope = scope;
    this.key = key;
    this.token = token;
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

/**
 * Whether a query that was sent may have been applied although no answer came: the ledger's own timeout (the
 * statement may still be running, or waiting to be sent), or a connection that broke mid-query. Not so for an
 * error the server answered the statement with (it was rolled back) nor for a connection that never opened.
 */
export function isOutcomeUnknown(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined) return code.startsWith('08') || BROKEN_CODES.has(code);
  return (
    error instanceof Error && BROKEN_MESSAGE.test(error.message) && !NEVER_SENT_MESSAGE.test(error.message)
  );
}

/**
 * Codes of a connection that broke while a query was out: sockets, and the server ending the session. Each is a
 * connection failure too, so an unknown outcome is always retryable.
 */
const BROKEN_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02']);
/** What node-postgres says, without a code, when the connection ends mid-query or its query read times out. */
const BROKEN_MESSAGE = /connection terminated|query read timeout/i;
/** …and when it ends while connecting. */
const NEVER_SENT_MESSAGE = /connection timeout|trying to connect/i;
