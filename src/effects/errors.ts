/**
 * Typed errors of the effects entry. The SQLite and Redis ledgers import these classes through
 * `cleanturn/effects`, so that `instanceof` holds whichever ledger threw.
 *
 * @module
 */
import { CleanturnError } from 'cleanturn';

/**
 * A ledger write was fenced off: the caller's lease expired and another holder has claimed (or settled) the
 * key since. The other holder's record stands.
 */
export class LeaseLostError extends CleanturnError {
  /** The ledger scope (turn id). */
  readonly scope: string;
  /** The effect key. */
  readonly key: string;

  constructor(scope: string, key: string) {
    super(`effect ${key} of ${scope}: the lease was lost to another holder`, { retryable: false });
    this.scope = scope;
    this.key = key;
  }
}

/**
 * A result cannot be stored: it is not JSON data (a `Date`, a `Map`, a class instance, a `BigInt`, a cycle,
 * `NaN`), it is nested deeper than 256 levels, or it is too big (its JSON text longer than a string can be, or
 * than the ledger's storage takes). Durable ledgers store results as JSON and replay them to other processes, so
 * every ledger rejects these, the in-memory one too. `executeTools` records the call as failed with this error:
 * the effect did run, so a later run replays the failure instead of running it again.
 */
export class EffectResultError extends CleanturnError {
  /** Where in the result the offending value is (`result.refund.created`). */
  readonly path: string;

  /**
   * @param path Where the value is.
   * @param problem What is wrong with it.
   * @param cause What reading or storing it threw, if anything did.
   */
  constructor(path: string, problem: string, cause?: unknown) {
    super(`${path}: ${problem}; an effect result must be JSON data`, { retryable: false, cause });
    this.path = path;
  }
}

/** A `tool-call` reached {@link executeTools} without an `effectKey`: put the executor after `cleanTurn`. */
export class MissingEffectKeyError extends CleanturnError {
  constructor(toolName: string) {
    super(`tool call ${toolName} has no effectKey: executeTools runs the output of cleanTurn`, {
      retryable: false,
    });
  }
}

/**
 * A handler ran longer than `handlerTimeoutMs` of {@link executeTools}: its `signal` was aborted with this error
 * and the call was reported as failed. Whether the effect happened is unknown (the handler may still be running),
 * so its claim is neither released nor recorded: it expires after `leaseMs`, as a crashed holder's does, and the
 * next run takes it over as in doubt (`reclaimed`). Retryable.
 */
export class HandlerTimeoutError extends CleanturnError {
  /** The tool's name. */
  readonly toolName: string;
  /** The call's effect key. */
  readonly effectKey: string;
  /** The timeout that ran out, in milliseconds. */
  readonly timeoutMs: number;

  constructor(toolName: string, effectKey: string, timeoutMs: number) {
    super(
      `tool ${toolName} (effect ${effectKey}) did not settle within ${timeoutMs} ms (handlerTimeoutMs); whether its effect happened is unknown`,
      { retryable: true },
    );
    this.toolName = toolName;
    this.effectKey = effectKey;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * An effect is in doubt and was not run again (`inDoubt: 'report'` of {@link executeTools}): an earlier holder
 * claimed it and its lease expired without an outcome, so the effect may or may not have happened. It is
 * recorded as this failure, so later runs replay it instead of running the effect: check with the service (by
 * the effect key) what happened. Not retryable.
 */
export class EffectInDoubtError extends CleanturnError {
  /** The ledger scope (turn id). */
  readonly scope: string;
  /** The effect key. */
  readonly key: string;

  constructor(scope: string, key: string) {
    super(
      `effect ${key} of ${scope} is in doubt: an earlier holder's lease expired without an outcome, so it may or may not have happened; not run again`,
      { retryable: false },
    );
    this.scope = scope;
    this.key = key;
  }
}
