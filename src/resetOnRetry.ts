import { Observable, type OperatorFunction } from 'rxjs';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { ResetEvent } from './types.js';

/** The events {@link resetOnRetry} emits for an input of `E`. */
export type WithResets<E> = Exclude<E, { type: 'retry' }> | ResetEvent;

/**
 * Turns each `retry` into a typed `reset` and drops stragglers of abandoned attempts.
 *
 * A `reset` tells every consumer to discard what earlier attempts delivered: buffers, rendered text, pending
 * calls. An event whose `attempt` is older than the newest attempt seen arrives too late and is dropped.
 * Place it after {@link tagAttempts}.
 *
 * ```text
 * source:       -a-b-r-c-x-d-|       x is a late event of attempt 1
 *          resetOnRetry()
 * result:       -a-b-R-c---d-|       R = { type: 'reset', attempt: 2, reason }
 * ```
 *
 * State: the newest attempt seen.
 *
 * ## Example
 * ```ts
 * import { from } from 'rxjs';
 * import { resetOnRetry, tagAttempts } from 'cleanturn';
 *
 * from([
 *   { type: 'text', text: 'Refunding the dam' },
 *   { type: 'retry', reason: 'connection reset' },
 *   { type: 'text', text: 'Refund started.' },
 * ] as const)
 *   .pipe(tagAttempts(), resetOnRetry())
 *   .subscribe((e) => {
 *     if (e.type === 'reset') console.log(`clear the screen: attempt ${e.attempt} starts (${e.reason})`);
 *   });
 * ```
 *
 * @see {@link tagAttempts}, which numbers the attempts this operator compares.
 * @returns An operator from attempted events to attempted events with resets.
 */
export function resetOnRetry<E extends { type: string; attempt: number }>(): OperatorFunction<
  E,
  WithResets<E>
> {
  return function resetOnRetryOperator(source) {
    // One subscriber per event rather than a `filter` and a `map`: it sits on the path of every token.
    return new Observable<WithResets<E>>((subscriber) => {
      // The newest attempt seen; anything older is a straggler.
      let current = 0;
      return subscribeLinked(source, subscriber, {
        next(event) {
          let out: WithResets<E>;
          try {
            if (event.attempt < current) return;
            current = event.attempt;
            if (event.type === 'retry') {
              const { reason } = event as unknown as { reason?: unknown };
              out = {
                type: 'reset',
                attempt: event.attempt,
                reason: typeof reason === 'string' ? reason : 'retry',
              };
            } else {
              out = event as Exclude<E, { type: 'retry' }>;
            }
          } catch (error) {
            // Not an event (null, say): an error notification, as a `map` would send.
            subscriber.error(error);
            return;
          }
          subscriber.next(out);
        },
        error(error) {
          subscriber.error(error);
        },
        complete() {
          subscriber.complete();
        },
      });
    });
  };
}
