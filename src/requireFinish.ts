import { concat, defer, EMPTY, type MonoTypeOperatorFunction, tap, throwError } from 'rxjs';
import { MissingFinishError } from './errors.js';

/**
 * Errors with a retryable {@link MissingFinishError} when the source completes without a `finish` for its
 * current attempt.
 *
 * A socket that closes cleanly just before the finish looks like a normal end of stream; without this check
 * the turn would quietly end half-written. Place it before {@link retryAsEvents} so that the cut-off attempt
 * is retried. It also works on a tagged stream: a `retry` or `reset` starts a new attempt that needs its own
 * `finish`.
 *
 * ```text
 * source:       -a-b-f-|         source:       -a-b-|
 *          requireFinish()                requireFinish()
 * result:       -a-b-f-|         result:       -a-b-#      # = MissingFinishError (retryable)
 * ```
 *
 * State: whether the current attempt has finished.
 *
 * ## Example
 * ```ts
 * import { defer } from 'rxjs';
 * import { requireFinish, retryAsEvents } from 'cleanturn';
 *
 * const turn$ = defer(() => streamFromProvider()).pipe(requireFinish(), retryAsEvents({ count: 3 }));
 * ```
 *
 * @see {@link retryAsEvents}, which retries the error this raises.
 * @returns An operator that passes events through and rejects a completion without `finish`.
 */
export function requireFinish<E extends { type: string }>(): MonoTypeOperatorFunction<E> {
  return function requireFinishOperator(source) {
    return defer(() => {
      // Whether the current attempt has sent its finish.
      let finished = false;
      // The current attempt's number, when the events carry one.
      let attempt: number | undefined;
      return concat(
        source.pipe(
          tap((event) => {
            const a = (event as { attempt?: unknown }).attempt;
            if (typeof a === 'number') attempt = a;
            if (event.type === 'finish') finished = true;
            else if (event.type === 'retry' || event.type === 'reset') finished = false;
          }),
        ),
        defer(() => (finished ? EMPTY : throwError(() => new MissingFinishError(attempt)))),
      );
    });
  };
}
