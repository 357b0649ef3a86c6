import { describeError } from '../../internal/describeError.js';
import { EffectError } from '../errors.js';

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
 * A PostgreSQL query of the ledger failed: `ledger-timeout` when it got no answer in time (`driverCode`
 * `ETIMEDOUT`: the ledger's own `queryTimeoutMs`, or the socket's), else `ledger-failed`. `retryable` for
 * connection failures. `note` says what the ledger knows of the write's outcome, for the message. @internal
 */
export function postgresLedgerError(
  operation: PostgresLedgerOperation,
  cause: unknown,
  note?: string,
): EffectError {
  return postgresError(operation, cause, note, {});
}

/**
 * A claim got no answer and the ledger could not find out whether it was applied: `outcome-unknown`. If it was,
 * it holds the key under `token`. Retryable. @internal
 */
export function postgresOutcomeUnknownError(
  scope: string,
  key: string,
  token: string,
  cause: unknown,
): EffectError {
  return postgresError(
    'claim',
    cause,
    `whether the claim of ${key} in ${scope} was applied is unknown; the effect was not run, and the next claim of the key through this ledger takes the claim up if it was applied`,
    { outcomeUnknown: { scope, key, token } },
  );
}

function postgresError(
  operation: PostgresLedgerOperation,
  cause: unknown,
  note: string | undefined,
  { outcomeUnknown }: { outcomeUnknown?: { scope: string; key: string; token: string } },
): EffectError {
  const driverCode = errorCode(cause);
  const hint = HINTS[driverCode ?? ''];
  const timeoutMs = (cause as { timeoutMs?: unknown } | null)?.timeoutMs;
  return new EffectError(
    outcomeUnknown !== undefined
      ? 'outcome-unknown'
      : driverCode === 'ETIMEDOUT'
        ? 'ledger-timeout'
        : 'ledger-failed',
    `postgres effect ledger: ${operation} failed: ${describeError(cause)}${driverCode === undefined ? '' : ` (${driverCode})`}${note === undefined ? '' : `; ${note}`}${hint === undefined ? '' : `; ${hint}`}`,
    {
      retryable: isConnectionFailure(cause, driverCode),
      cause,
      operation,
      driverCode,
      timeoutMs: typeof timeoutMs === 'number' ? timeoutMs : undefined,
      ...outcomeUnknown,
    },
  );
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
