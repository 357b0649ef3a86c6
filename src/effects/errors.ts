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
 * `NaN`). Durable ledgers store results as JSON and replay them to other processes, so every ledger rejects
 * these, the in-memory one too.
 */
export class EffectResultError extends CleanturnError {
  /** Where in the result the offending value is (`result.refund.created`). */
  readonly path: string;

  constructor(path: string, problem: string) {
    super(`${path}: ${problem}; an effect result must be JSON data`, { retryable: false });
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
