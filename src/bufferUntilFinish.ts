import { type MonoTypeOperatorFunction, Observable } from 'rxjs';
import { AttemptTracker } from './AttemptTracker.js';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { NotInferred } from './internal/types.js';

/** Options of {@link bufferUntilFinish}. */
export interface BufferUntilFinishOptions<C> {
  /**
   * Lets a call through at once instead of holding it: for pure reads whose early start saves latency and
   * whose repetition costs nothing. Never use it for calls that change state.
   */
  early?: (call: C) => boolean;
}

/**
 * Holds `tool-call` events until their attempt finishes, then releases them in arrival order immediately
 * before that attempt's `finish`, in the same frame.
 *
 * Calls of an attempt that never finishes are never released: a `reset` or `retry` (or any event of a newer
 * attempt), an error, or a completion without `finish` discards them. A consumer that starts a newer attempt
 * while the calls are being released (a retry pushed from its handler) receives none of the rest, nor the
 * old finish. All other events pass through at once, except stragglers of older attempts and anything after
 * a finish, which are dropped (the rules of {@link AttemptTracker}). Place it after {@link tagAttempts} (and
 * usually {@link resetOnRetry}).
 *
 * ```text
 * source:       -t-c-d-R-t-k-e-f-|     c, k: tool calls; R: reset; f: finish
 *          bufferUntilFinish()
 * result:       -t---d-R-t---e-(kf)|   c is discarded with attempt 1; k is released with f
 * ```
 *
 * State: the held calls of the live attempt, and an {@link AttemptTracker}.
 *
 * ## Example
 * ```ts
 * import { bufferUntilFinish, resetOnRetry, tagAttempts } from 'cleanturn';
 *
 * providerEvents$
 *   .pipe(
 *     tagAttempts(),
 *     resetOnRetry(),
 *     bufferUntilFinish({ early: (call) => call.name === 'lookup_order' }), // a pure read may start early
 *   )
 *   .subscribe(render);
 * ```
 *
 * @see {@link cleanTurn}, the recommended policy that includes it.
 * @param options `early` lets pure reads through without waiting.
 * @returns An operator that delays state-changing calls to the end of their attempt.
 */
export function bufferUntilFinish<E extends { type: string; attempt: number }>(
  // Not inferred from `early`: a named predicate such as `(call: { name: string }) => boolean` would make `E`
  // its constraint (and the output type too); `E` comes from the source.
  options: BufferUntilFinishOptions<NotInferred<Extract<E, { type: 'tool-call' }>>> = {},
): MonoTypeOperatorFunction<E> {
  const { early } = options;
  return function bufferUntilFinishOperator(source) {
    // Written by hand: one event in may be several out (the held calls and the finish), which `mergeMap` or
    // `concatMap` would pay for with an array or an inner observable on every event.
    return new Observable<E>((subscriber) => {
      const attempts = new AttemptTracker();
      // Calls of the live attempt, waiting for its finish.
      let held: E[] = [];
      const subscription = subscribeLinked(source, subscriber, {
        next(event) {
          const step = attempts.step(event);
          if (step === 'stale') return;
          if (step === 'newer') held = [];
          if (event.type === 'tool-call') {
            if (early?.(event as Extract<E, { type: 'tool-call' }>) === true) subscriber.next(event);
            else held.push(event);
            return;
          }
          if (event.type === 'finish' && held.length > 0) {
            const release = held;
            held = [];
            for (const call of release) {
              subscriber.next(call);
              // The consumer may have started a newer attempt (a retry pushed from its handler) or unsubscribed:
              // then this attempt's remaining calls and its finish are void.
              if (subscriber.closed || !attempts.isLive(event.attempt)) return;
            }
          }
          subscriber.next(event);
        },
        error(error) {
          held = [];
          subscriber.error(error);
        },
        complete() {
          held = [];
          subscriber.complete();
        },
      });
      return () => {
        held = [];
        subscription.unsubscribe();
      };
    });
  };
}
