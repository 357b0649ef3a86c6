/**
 * Typed errors of the Redis turn log.
 *
 * @module
 */
import { CleanturnError } from 'cleanturn';

/** The turn log operations, as the errors name them. */
export type RedisTurnLogOperation = 'claim' | 'append' | 'read' | 'stop' | 'renew' | 'takeOver';

/**
 * Redis did not answer within the turn log's `commandTimeoutMs` (for a reader's blocking read: `blockMs` plus
 * `commandTimeoutMs`), so the log stopped waiting, whatever the client's own retry settings: the server is down,
 * unreachable or stalled. A claim or an append is first sent again under the same claim token (4 sends in all), so
 * that an answer that comes late still settles it; this error means none came. A claim given up on is undone by a
 * release sent behind it (it runs after the claim, should Redis apply the claim late); an append given up on may
 * still be applied, and the end that follows it is then written after it. Retryable.
 */
export class TurnLogTimeoutError extends CleanturnError {
  /** What the log was doing. */
  readonly operation: RedisTurnLogOperation;
  /** The timeout that ran out, in milliseconds: for each send of a claim or an append. */
  readonly timeoutMs: number;
  /** How many times it was sent (a read: 1). */
  readonly tries: number;

  constructor(operation: RedisTurnLogOperation, timeoutMs: number, tries = 1) {
    super(
      tries === 1
        ? `Redis turn log: ${operation} got no answer within ${timeoutMs} ms (commandTimeoutMs)`
        : `Redis turn log: ${operation} got no answer to any of ${tries} sends, each given ${timeoutMs} ms (commandTimeoutMs)`,
      { retryable: true },
    );
    this.operation = operation;
    this.timeoutMs = timeoutMs;
    this.tries = tries;
  }
}
