import { Observable, type OperatorFunction } from 'rxjs';
import { AttemptTracker } from './AttemptTracker.js';
import { MissingFinishError } from './errors.js';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { WholeCallEvents } from './internal/types.js';

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
 * State: the live attempt and whether it has finished (an {@link AttemptTracker}).
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
export function requireFinish<E extends WholeCallEvents<E, 'requireFinish()'>>(): OperatorFunction<E, E> {
  return function requireFinishOperator(source) {
    // Written by hand: turning a completion into an error with RxJS primitives takes `concat` with a deferred
    // check, one more subscription per attempt that also reports a stray completion under TestScheduler.
    return new Observable<E>((subscriber) => {
      const attempts = new AttemptTracker();
      // Whether the events carry attempt numbers (the error then names the attempt).
      let tagged = false;
      // Fragments are ruled out by the input type only; the events are `E`.
      return subscribeLinked(source as Observable<unknown> as Observable<E>, subscriber, {
        next(event) {
          attempts.step(event);
          if (typeof (event as { attempt?: unknown }).attempt === 'number') tagged = true;
          subscriber.next(event);
        },
        error(error) {
          subscriber.error(error);
        },
        complete() {
          if (attempts.finished) subscriber.complete();
          else subscriber.error(new MissingFinishError(tagged ? attempts.attempt : undefined));
        },
      });
    });
  };
}
