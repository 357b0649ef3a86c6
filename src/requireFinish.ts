import { type MonoTypeOperatorFunction, Observable } from 'rxjs';
import { MissingFinishError } from './errors.js';
import { subscribeLinked } from './internal/subscribeLinked.js';

/**
 * Errors with a retryable {@link MissingFinishError} when the source completes without a `finish` for its
 * current attempt.
 *
 * A socket that closes cleanly just before the finish looks like a normal end of stream; without this check
 * the turn would quietly end half-written. Place it before {@link retryAsEvents} so that the cut-off attempt
 * is retried. It also works on a tagged stream: a `retry` or `reset` (or any event of a newer attempt) starts
 * a new attempt that needs its own `finish`, and a straggler of an older attempt (even its `finish`) is passed
 * on but not counted.
 *
 * ```text
 * source:       -a-b-f-|         source:       -a-b-|
 *          requireFinish()                requireFinish()
 * result:       -a-b-f-|         result:       -a-b-#      # = MissingFinishError (retryable)
 * ```
 *
 * State: the current attempt's number, and whether it has finished.
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
    return new Observable<E>((subscriber) => {
      // Whether the current attempt has sent its finish.
      let finished = false;
      // The current attempt's number, when the events carry one.
      let attempt: number | undefined;
      const subscription = subscribeLinked(source, subscriber, {
        next(event) {
          const a = (event as { attempt?: unknown }).attempt;
          if (typeof a === 'number') {
            // A straggler of an older attempt says nothing about the current one.
            if (attempt !== undefined && a < attempt) {
              subscriber.next(event);
              return;
            }
            // Any event of a newer attempt starts it, even without a `retry` or `reset` before it.
            if (attempt !== undefined && a > attempt) finished = false;
            attempt = a;
          }
          if (event.type === 'finish') finished = true;
          else if (event.type === 'retry' || event.type === 'reset') finished = false;
          subscriber.next(event);
        },
        error(error) {
          subscriber.error(error);
        },
        complete() {
          if (finished) subscriber.complete();
          else subscriber.error(new MissingFinishError(attempt));
        },
      });
      return () => subscription.unsubscribe();
    });
  };
}
