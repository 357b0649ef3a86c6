/**
 * The one error class of the effects entry and its ledgers, {@link EffectError}, and the internal factories that
 * build each case. The SQLite, Redis and PostgreSQL ledgers import them by relative path; `instanceof` holds
 * whichever ledger threw, and across two copies of the package.
 *
 * @module
 */
import { CleanturnError } from '../errors.js';

/**
 * The cases of an {@link EffectError}:
 *
 * | code | the case | retryable |
 * |---|---|---|
 * | `lease-lost` | a ledger write was fenced off: another holder claimed (or settled) the key since (`scope`, `key`) | no |
 * | `unstorable-result` | a result is not JSON data, nested too deep, or too big for the ledger (`path`) | no |
 * | `missing-effect-key` | a `tool-call` reached `executeTools` without an `effectKey` (`toolName`) | no |
 * | `handler-timeout` | a handler ran past `handlerTimeoutMs` (`toolName`, `effectKey`, `timeoutMs`) | yes |
 * | `in-doubt` | a reclaimed effect was not run again, with `inDoubt: 'report'` (`scope`, `key`) | no |
 * | `ledger-busy` | SQLite: another connection held the lock past `busyTimeoutMs` (`operation`, `busyTimeoutMs`) | yes |
 * | `ledger-closed` | SQLite: `close()` was called while an operation waited for the lock (`operation`) | yes |
 * | `ledger-read-only` | SQLite: the database cannot be written (`operation`, `driverCode`) | no |
 * | `ledger-timeout` | Redis or PostgreSQL did not answer in time (`operation`, `timeoutMs`; PostgreSQL: `driverCode`) | yes |
 * | `ledger-memory-full` | Redis is out of memory and refused a new key (`operation`) | yes |
 * | `ledger-data-lost` | Redis forgot the ledger's records: its marker key changed (`markerKey`, `expected`, `found`) | no |
 * | `ledger-persistence` | Redis can lose records (no AOF, an evicting policy…), with `persistence: 'require'` (`problems`) | no |
 * | `ledger-failed` | PostgreSQL: a query of the ledger failed (`operation`, `driverCode`) | for connection failures |
 * | `outcome-unknown` | PostgreSQL: whether a claim whose answer was lost was applied is unknown (`operation`, `driverCode`, `scope`, `key`, `token`) | yes |
 *
 * @inline
 */
export type EffectErrorCode =
  | 'lease-lost'
  | 'unstorable-result'
  | 'missing-effect-key'
  | 'handler-timeout'
  | 'in-doubt'
  | 'ledger-busy'
  | 'ledger-closed'
  | 'ledger-read-only'
  | 'ledger-timeout'
  | 'ledger-memory-full'
  | 'ledger-data-lost'
  | 'ledger-persistence'
  | 'ledger-failed'
  | 'outcome-unknown';

/**
 * What a ledger was doing when it failed, as its errors name it.
 * @inline
 */
export type EffectLedgerOperation =
  | 'claim'
  | 'complete'
  | 'fail'
  | 'release'
  | 'renew'
  | 'get'
  | 'purge'
  | 'seen'
  | 'open'
  | 'create table';

/**
 * An error of `cleanturn/effects` and its ledgers; its code names the case, and the fields
 * that its code names are set (the others are `undefined`).
 *
 * - `lease-lost`: a ledger write was fenced off: the caller's lease expired and another holder has claimed (or
 *   settled) the key since. The other holder's record stands.
 * - `unstorable-result`: a result cannot be stored: it is not JSON data (a `Date`, a `Map`, a class instance, a
 *   `BigInt`, a cycle, `NaN`), it is nested deeper than 256 levels, or it is too big (its JSON text longer than a
 *   string can be, or than the ledger's storage takes). Durable ledgers store results as JSON and replay them to
 *   other processes, so every ledger rejects these, the in-memory one too. `executeTools` records the call as
 *   failed with this error: the effect did run, so a later run replays the failure instead of running it again.
 * - `missing-effect-key`: a `tool-call` reached `executeTools` without an `effectKey`: put the executor after
 *   `cleanTurn`.
 * - `handler-timeout`: a handler ran longer than `handlerTimeoutMs` of `executeTools`: its `signal` was aborted
 *   with this error and the call was reported as failed. Whether the effect happened is unknown (the handler may
 *   still be running), so its claim is neither released nor recorded: it expires after `leaseMs`, as a crashed
 *   holder's does, and the next run takes it over as in doubt (`reclaimed`).
 * - `in-doubt`: an effect is in doubt and was not run again (`inDoubt: 'report'` of `executeTools`): an earlier
 *   holder claimed it and its lease expired without an outcome, so the effect may or may not have happened. It is
 *   recorded as this failure, so later runs replay it instead of running the effect: check with the service (by
 *   the effect key) what happened.
 * - `ledger-busy` (SQLite): another connection held the database's lock past the ledger's `busyTimeoutMs` (a
 *   backup, a migration, a long transaction of another program on the same file). Nothing was written.
 * - `ledger-closed` (SQLite): `close()` was called while an operation waited for the database's lock. Nothing was
 *   written; another ledger (after a restart) can do it.
 * - `ledger-read-only` (SQLite): the database cannot be written: SQLite said `SQLITE_READONLY…`, or
 *   `SQLITE_CANTOPEN…` for a file it could not open (a read-only file, directory or mount; in WAL mode SQLite
 *   must also create the `-wal` and `-shm` files beside the database; a database opened with `readonly: true` or
 *   `PRAGMA query_only`; a file moved or deleted while open). Raised at open or at the first write: nothing was
 *   written, and no handler runs without its claim. What the ledger already holds is still read and replayed.
 * - `ledger-timeout`: Redis did not answer within `commandTimeoutMs`, asked twice for a write (a `claim` is then
 *   withdrawn once the server takes commands again; a `complete` or `fail` may still land, and then stands), or
 *   PostgreSQL did not answer within `queryTimeoutMs` (`driverCode` `ETIMEDOUT`).
 * - `ledger-memory-full` (Redis): the server is out of memory (`maxmemory` under `noeviction`) and refused a write
 *   that needs more: a new claim, or the marker key at first use. Nothing was written; memory frees as records
 *   expire, so retry with a back-off and alert on it.
 * - `ledger-data-lost` (Redis): the server no longer holds what this ledger wrote: the marker key it writes at
 *   first use is gone or holds another value (a restart without its data, or another server at the address). The
 *   ledger refuses every operation from then on: check the effects that were running or recorded, then create a
 *   new `RedisEffectLedger`.
 * - `ledger-persistence` (Redis): the server can lose ledger records (no AOF, `appendfsync no`, an evicting
 *   `maxmemory-policy`), and a lost claim lets an effect run twice; raised before anything is written with
 *   `persistence: 'require'`.
 * - `ledger-failed` (PostgreSQL): a query of the ledger failed. A claim never leaves its outcome unknown behind
 *   this error; of the other writes, only one whose connection failed mid-query may have been applied (the
 *   message says so), and a retry with the same token is safe. Retryable for connection failures (refused,
 *   reset, terminated, pool timeout, SQLSTATE class 08, server shutdown or start-up, too many connections, a
 *   cancelled statement, a deadlock or serialization failure), not for the rest (a missing table with
 *   `createTable: false`, a table of another shape, missing privileges, bad credentials).
 * - `outcome-unknown` (PostgreSQL): a claim got no answer and the ledger could not find out whether it was
 *   applied. Nobody was told `claimed`, so the effect was not run; if the claim was applied it holds the key under
 *   `token`, and the next claim of the key through the same ledger takes it up.
 *
 * @example
 * ```ts
 * if (error instanceof EffectError && error.code === 'ledger-busy') retryLater(error.operation);
 * ```
 */
export class EffectError extends CleanturnError<EffectErrorCode> {
  static override readonly kind: string = 'EffectError';

  /** The ledger scope (turn id) (`lease-lost`, `in-doubt`, `outcome-unknown`). */
  declare readonly scope: string | undefined;
  /** The effect key in the ledger (`lease-lost`, `in-doubt`, `outcome-unknown`). */
  declare readonly key: string | undefined;
  /** The fencing token the claim holds the key under, if it was applied (`outcome-unknown`). */
  declare readonly token: string | undefined;
  /** Where in the result the offending value is: `result.refund.created` (`unstorable-result`). */
  declare readonly path: string | undefined;
  /** The tool's name (`missing-effect-key`, `handler-timeout`). */
  declare readonly toolName: string | undefined;
  /** The call's effect key (`handler-timeout`). */
  declare readonly effectKey: string | undefined;
  /** The timeout that ran out, in milliseconds (`handler-timeout`, `ledger-timeout`). */
  declare readonly timeoutMs: number | undefined;
  /**
   * What the ledger was doing (`ledger-busy`, `ledger-closed`, `ledger-read-only`, `ledger-timeout`,
   * `ledger-memory-full`, `ledger-failed`, `outcome-unknown`).
   */
  declare readonly operation: EffectLedgerOperation | undefined;
  /** How long a SQLite ledger waited for the lock, in milliseconds (0 for a read, which never waits) (`ledger-busy`). */
  declare readonly busyTimeoutMs: number | undefined;
  /**
   * The driver's own code: SQLite's (`SQLITE_READONLY`, `SQLITE_READONLY_DBMOVED`, `SQLITE_CANTOPEN`…) for
   * `ledger-read-only`; PostgreSQL's SQLSTATE (`08006`, `42P01`…) or the socket error code (`ECONNREFUSED`,
   * `ETIMEDOUT`…), when the driver gave one, for `ledger-failed`, `ledger-timeout` and `outcome-unknown`.
   */
  declare readonly driverCode: string | undefined;
  /** The Redis marker key (`ledger-data-lost`). */
  declare readonly markerKey: string | undefined;
  /** The marker this ledger had seen (`ledger-data-lost`). */
  declare readonly expected: string | undefined;
  /** What the server holds at the marker key now, `undefined` when nothing (`ledger-data-lost`). */
  declare readonly found: string | undefined;
  /** What is wrong with the Redis server's settings, one line per setting (`ledger-persistence`). */
  declare readonly problems: readonly string[] | undefined;

  /**
   * @param code Which case this is.
   * @param message One line for people and logs.
   * @param details The fields of the case, whether a new attempt could succeed, and the cause.
   */
  constructor(
    code: EffectErrorCode,
    message: string,
    details: Partial<Omit<EffectError, keyof CleanturnError>> & { retryable: boolean; cause?: unknown },
  ) {
    super(code, message, details);
  }
}

/** A ledger write was fenced off: another holder has claimed (or settled) the key since. @internal */
export function leaseLostError(scope: string, key: string): EffectError {
  return new EffectError('lease-lost', `effect ${key} of ${scope}: the lease was lost to another holder`, {
    retryable: false,
    scope,
    key,
  });
}

/**
 * A result cannot be stored: `path` says where the offending value is, `problem` what is wrong with it, `cause`
 * what reading or storing it threw. @internal
 */
export function unstorableResultError(path: string, problem: string, cause?: unknown): EffectError {
  return new EffectError('unstorable-result', `${path}: ${problem}; an effect result must be JSON data`, {
    retryable: false,
    cause,
    path,
  });
}

/** A `tool-call` reached `executeTools` without an `effectKey`. @internal */
export function missingEffectKeyError(toolName: string): EffectError {
  return new EffectError(
    'missing-effect-key',
    `tool call ${toolName} has no effectKey: executeTools runs the output of cleanTurn`,
    { retryable: false, toolName },
  );
}

/** A handler ran longer than `handlerTimeoutMs`. Retryable. @internal */
export function handlerTimeoutError(toolName: string, effectKey: string, timeoutMs: number): EffectError {
  return new EffectError(
    'handler-timeout',
    `tool ${toolName} (effect ${effectKey}) did not settle within ${timeoutMs} ms (handlerTimeoutMs); whether its effect happened is unknown`,
    { retryable: true, toolName, effectKey, timeoutMs },
  );
}

/** A reclaimed effect was not run again (`inDoubt: 'report'`). Not retryable. @internal */
export function effectInDoubtError(scope: string, key: string): EffectError {
  return new EffectError(
    'in-doubt',
    `effect ${key} of ${scope} is in doubt: an earlier holder's lease expired without an outcome, so it may or may not have happened; not run again`,
    { retryable: false, scope, key },
  );
}
