/**
 * The errors of the Redis effect ledger: {@link EffectError}s built by the factories here.
 *
 * @module
 */
import { EffectError } from '../errors.js';

/** The ledger operations, as its errors name them. */
export type RedisLedgerOperation = 'claim' | 'complete' | 'fail' | 'release' | 'renew' | 'get';

/**
 * Redis did not answer within `commandTimeoutMs` (a write: asked twice): `ledger-timeout`. A claim is then
 * withdrawn once the server takes commands again; a `complete` or `fail` may still land, and then stands; a
 * `release` or `renew` may still land too. Retryable. @internal
 */
export function ledgerTimeoutError(operation: RedisLedgerOperation, timeoutMs: number): EffectError {
  return new EffectError(
    'ledger-timeout',
    `Redis effect ledger: ${operation} got no answer within ${timeoutMs} ms (commandTimeoutMs)${
      operation === 'get'
        ? ''
        : operation === 'claim'
          ? ', asked twice; the claim is withdrawn once the server takes commands again'
          : ', asked twice; whether it was applied is unknown'
    }`,
    { retryable: true, operation, timeoutMs },
  );
}

/**
 * The server is out of memory (`maxmemory` under `noeviction`) and refused a write that needs more:
 * `ledger-memory-full`. Nothing was written. Retryable. @internal
 */
export function ledgerMemoryFullError(operation: RedisLedgerOperation, reply: string): EffectError {
  return new EffectError(
    'ledger-memory-full',
    `Redis effect ledger: ${operation} refused, the server is out of memory (maxmemory, maxmemory-policy ` +
      `noeviction); nothing was written. Redis said: ${reply}`,
    { retryable: true, operation },
  );
}

/**
 * The server no longer holds the ledger's marker key (or holds another value there): `ledger-data-lost`. Not
 * retryable: the ledger refuses every operation from then on. @internal
 */
export function ledgerDataLostError(
  markerKey: string,
  expected: string,
  found: string | undefined,
): EffectError {
  return new EffectError(
    'ledger-data-lost',
    `Redis effect ledger: the server forgot the ledger's records: its marker key ${markerKey} ` +
      `${found === undefined ? 'is gone' : `holds ${found}, not ${expected}`} (a restart without its data, ` +
      'or another server at the address); a claim now could run an effect a second time. Check the effects ' +
      'that were running or recorded, then create a new RedisEffectLedger',
    { retryable: false, markerKey, expected, found },
  );
}

/**
 * The server can lose ledger records (no AOF, `appendfsync no`, an evicting `maxmemory-policy`), one problem a
 * line: `ledger-persistence`. Not retryable: the server's configuration has to change. @internal
 */
export function ledgerPersistenceError(problems: readonly string[]): EffectError {
  return new EffectError(
    'ledger-persistence',
    `Redis effect ledger: the server can lose claims, and effects would run twice: ${problems.join('; ')}. ` +
      `Fix the server (appendonly yes, appendfsync everysec or always, maxmemory-policy noeviction) or pass ` +
      `persistence: 'warn' or 'ignore' to RedisEffectLedger`,
    { retryable: false, problems },
  );
}
