/**
 * Typed errors of the Redis turn log.
 *
 * @module
 */
import { CleanturnError } from 'cleanturn';

/** The turn log operations, as the errors name them. */
export type RedisTurnLogOperation = 'claim' | 'append' | 'read';

/**
 * Redis did not answer within the turn log's `commandTimeoutMs` (for a reader's blocking read: `blockMs` plus
 * `commandTimeoutMs`), so the log stopped waiting, whatever the client's own retry settings: the server is down,
 * unreachable or stalled. Whether a claim or an append was applied is unknown: the client may still send it once
 * it reconnects. Retryable.
 */
export class TurnLogTimeoutError extends CleanturnError {
  /** What the log was doing. */
  readonly operation: RedisTurnLogOperation;
  /** The timeout that ran out, in milliseconds. */
  readonly timeoutMs: number;

  constructor(operation: RedisTurnLogOperation, timeoutMs: number) {
    super(
      `Redis turn log: ${operation} got no answer within ${timeoutMs} ms (commandTimeoutMs); whether it was applied is unknown`,
      { retryable: true },
    );
    this.operation = operation;
    this.timeoutMs = timeoutMs;
  }
}
