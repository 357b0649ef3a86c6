import { type MonoTypeOperatorFunction, Observable } from 'rxjs';
import { subscribeLinked } from './internal/subscribeLinked.js';

/**
 * `T`, in a position that TypeScript must not infer `T` from (what `NoInfer<T>` does since TypeScript 5.4, but
 * resolved to `T` itself in the result).
 */
type NotInferred<T> = [T][T extends unknown ? 0 : never];

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
 * attempt), an error, or a completion without `finish` discards them. All other events pass through at
 * once. Place it after {@link tagAttempts} (and usually {@link resetOnRetry}).
 *
 * ```text
 * source:       -t-c-d-R-t-k-e-f-|     c, k: tool calls; R: reset; f: finish
 *          bufferUntilFinish()
 * result:       -t---d-R-t---e-(kf)|   c is discarded with attempt 1; k is released with f
 * ```
 *
 * State: the held calls of the newest attempt, and that attempt's number.
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
    return new Observable<E>((subscriber) => {
      // Calls of attempt `heldAttempt`, waiting for its finish.
      let held: E[] = [];
      // The newest attempt seen; older events are stragglers whose calls are never held.
      let heldAttempt = 0;
      const subscription = subscribeLinked(source, subscriber, {
        next(event) {
          if (subscriber.closed) return;
          if (event.attempt > heldAttempt) {
            held = [];
            heldAttempt = event.attempt;
          }
          switch (event.type) {
            case 'tool-call': {
              let now: boolean;
              try {
                now = early?.(event as Extract<E, { type: 'tool-call' }>) === true;
              } catch (error) {
                held = [];
                subscriber.error(error);
                return;
              }
              if (now) subscriber.next(event);
              else if (event.attempt === heldAttempt) held.push(event);
              return;
            }
            case 'finish': {
              if (event.attempt === heldAttempt && held.length > 0) {
                const release = held;
                held = [];
                for (const call of release) subscriber.next(call);
              }
              subscriber.next(event);
              return;
            }
            case 'reset':
            case 'retry':
              held = [];
              subscriber.next(event);
              return;
            default:
              subscriber.next(event);
          }
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
