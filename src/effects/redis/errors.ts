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
 * ledger stopped waiting, whatever the client's own retry settings. A write (`claim`, `complete`, `fail`,
 * `release`, `renew`) that gets no answer, or whose connection fails, is asked again once, under the same token,
 * within another `commandTimeoutMs`: every write is idempotent under its token, so the second answer says what
 * holds. This error means that the second got no answer either:
 * - a `claim` is then withdrawn: the ledger sends, behind it, a command that deletes the claim (or, for a claim
 *   that took over an expired one, ends its lease), so that once the server takes commands again the key is not
 *   held by a claim nobody runs. Nothing ran; a new attempt claims afresh.
 * - a `complete` or `fail` may still land once the server answers, and then stands: it records what happened.
 *   Until it does, the claim stays, and a later claim waits for its lease and takes it over as in doubt.
 * - a `release` or `renew` may still land too; either is harmless late.
 *
 * Retryable.
 */
export class LedgerTimeoutError extends CleanturnError {
  /** What the ledger was doing. */
  readonly operation: RedisLedgerOperation;
  /** The timeout that ran out (each time), in milliseconds. */
  readonly timeoutMs: number;

  constructor(operation: RedisLedgerOperation, timeoutMs: number) {
    super(
      `Redis effect ledger: ${operation} got no answer within ${timeoutMs} ms (commandTimeoutMs)${
        operation === 'get'
          ? ''
          : operation === 'claim'
            ? ', asked twice; the claim is withdrawn once the server takes commands again'
            : ', asked twice; whether it was applied is unknown'
      }`,
      { retryable: true },
    );
    this.operation = operation;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The Redis server is out of memory (`maxmemory` reached under `maxmemory-policy noeviction`) and refused a write
 * that needs more: a new claim, or the ledger's marker key at first use. Nothing was written. Writes that record
 * what already ran (`complete` and `fail` of a claim, `renew`, `release`) take no new key and are not refused.
 * Retryable: memory frees as records expire (after their retention) and other keys are deleted, or when the
 * server is given more; until then every new claim gets this error, so retry with a back-off and alert on it.
 */
export class LedgerMemoryFullError extends CleanturnError {
  /** What the ledger was doing. */
  readonly operation: RedisLedgerOperation;

  constructor(operation: RedisLedgerOperation, reply: string) {
    super(
      `Redis effect ledger: ${operation} refused, the server is out of memory (maxmemory, maxmemory-policy ` +
        `noeviction); nothing was written. Redis said: ${reply}`,
      { retryable: true },
    );
    this.operation = operation;
  }
}

/**
 * The Redis server no longer holds what this ledger wrote: the marker key it writes at first use (no TTL, one
 * per prefix) is gone or holds another value. The server restarted without its data (a lost volume, AOF off) or
 * another server answers at the address, so claims and results recorded before may be gone, and a claim now
 * could run an effect a second time. Seen on every connection and by every ledger script, so a command the
 * client sends again after a reconnect is refused too. Not retryable: the ledger refuses every operation from
 * then on. Check the effects that were running or recorded (with their services, by effect key), then create a
 * new `RedisEffectLedger`, which takes the server as it is.
 */
export class LedgerDataLostError extends CleanturnError {
  /** The marker key. */
  readonly markerKey: string;
  /** The marker this ledger had seen. */
  readonly expected: string;
  /** What the server holds there now, `undefined` when nothing. */
  readonly found: string | undefined;

  constructor(markerKey: string, expected: string, found: string | undefined) {
    super(
      `Redis effect ledger: the server forgot the ledger's records: its marker key ${markerKey} ` +
        `${found === undefined ? 'is gone' : `holds ${found}, not ${expected}`} (a restart without its data, ` +
        'or another server at the address); a claim now could run an effect a second time. Check the effects ' +
        'that were running or recorded, then create a new RedisEffectLedger',
      { retryable: false },
    );
    this.markerKey = markerKey;
    this.expected = expected;
    this.found = found;
  }
}

/**
 * The Redis server can lose ledger records — on a restart (no AOF), on an OS crash (`appendfsync no`) or under
 * memory pressure (an evicting `maxmemory-policy`) — and a lost claim or result lets an effect run twice. Raised
 * before the ledger writes anything, with `persistence: 'require'` (the default): at first use, on every
 * reconnect, and by a claim that finds AOF or the memory settings changed since. Not retryable: the server's
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
