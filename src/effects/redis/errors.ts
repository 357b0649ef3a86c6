/**
 * Typed errors of the Redis effect ledger.
 *
 * @module
 */
import { CleanturnError } from 'cleanturn';

/** The ledger operations, as the errors name them. */
export type RedisLedgerOperation = 'claim' | 'complete' | 'fail' | 'release' | 'renew' | 'get';

/**
 * Redis did not answer within the ledger's `commandTimeoutMs` (the server is down, unreachable or stalled), so the
 * ledger stopped waiting, whatever the client's own retry settings. Whether the command was applied is unknown:
 * the client may still send it once it reconnects. A claim taken that way expires after its lease, as a crashed
 * holder's does. Retryable.
 */
export class LedgerTimeoutError extends CleanturnError {
  /** What the ledger was doing. */
  readonly operation: RedisLedgerOperation;
  /** The timeout that ran out, in milliseconds. */
  readonly timeoutMs: number;

  constructor(operation: RedisLedgerOperation, timeoutMs: number) {
    super(
      `Redis effect ledger: ${operation} got no answer within ${timeoutMs} ms (commandTimeoutMs); whether it was applied is unknown`,
      { retryable: true },
    );
    this.operation = operation;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The Redis server can lose ledger records — on a restart (no AOF), on an OS crash (`appendfsync no`) or under
 * memory pressure (an evicting `maxmemory-policy`) — and a lost claim or result lets an effect run twice. Raised
 * before the ledger writes anything, with `persistence: 'require'` (the default). Not retryable: the server's
 * configuration has to change (or choose `persistence: 'warn'` or `'ignore'` knowingly).
 */
export class LedgerPersistenceError extends CleanturnError {
  /** What is wrong, one line per setting. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(
      `Redis effect ledger: the server can lose claims, and effects would run twice: ${problems.join('; ')}. ` +
        `Fix the server (appendonly yes, appendfsync everysec or always, maxmemory-policy noeviction) or pass ` +
        `persistence: 'warn' or 'ignore' to RedisEffectLedger`,
      { retryable: false },
    );
    this.problems = problems;
  }
}
