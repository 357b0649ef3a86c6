import {
  from,
  Observable,
  type ObservableInput,
  type OperatorFunction,
  type Subscription,
  take,
  timer,
} from 'rxjs';
import { type FailedAttempt, isRetryable, RetriesExhaustedError } from './errors.js';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { RetryEvent } from './types.js';

/**
 * `T`, in a position that TypeScript must not infer `T` from (what `NoInfer<T>` does since TypeScript 5.4, but
 * resolved to `T` itself in the result).
 */
type NotInferred<T> = [T][T extends unknown ? 0 : never];

/** Options of {@link retryAsEvents}; `count`, `delay` and `resetOnSuccess` mean what they mean in RxJS `retry`. */
export interface RetryAsEventsOptions {
  /**
   * How many times to resubscribe after an error (so at most `count + 1` attempts). Default: `Infinity`, as in
   * RxJS; a turn should always set a cap.
   */
  count?: number;
  /**
   * Wait before each resubscription: milliseconds, or a function of the error and the retry number (1 for
   * the first retry) whose returned observable's first value triggers the retry. If it completes without a
   * value, the result completes; if it errors, the result errors. See {@link backoff}. Default: resubscribe at
   * once.
   */
  delay?: number | ((error: unknown, retryCount: number) => ObservableInput<unknown>);
  /** Reset the retry count when the source emits. Beware: any streamed event counts, which lifts the cap per turn. */
  resetOnSuccess?: boolean;
  /**
   * Whether an error deserves another attempt. Default: {@link isRetryable}, that is, everything except
   * errors that carry `retryable: false`. An error that is not retried passes through unchanged.
   */
  shouldRetry?: (error: unknown, retryCount: number) => boolean;
  /** The `reason` of the `retry` event for an error. Default: the error's message. */
  reason?: (error: unknown) => string;
}

/**
 * Retries an errored source like RxJS `retry`, but emits a `retry` event before each resubscription instead of
 * splicing the next attempt silently onto the last.
 *
 * Downstream, {@link tagAttempts} numbers the attempts from these events and {@link resetOnRetry} turns them
 * into resets. Past the cap it errors with a {@link RetriesExhaustedError} that carries every failed attempt
 * (its error, its reason, how much it had emitted). An error that `shouldRetry` declines passes through as it
 * is.
 *
 * ```text
 * source:       -a-b-#               (cold; the second subscription succeeds)
 *               -c-f-|
 *          retryAsEvents({ count: 2 })
 * result:       -a-b-r-c-f-|         r = { type: 'retry', reason, error }
 * ```
 *
 * State: the retry count, the failed attempts so far, the live subscription and the pending delay.
 *
 * ## Example
 * ```ts
 * import { defer } from 'rxjs';
 * import { backoff, cleanTurn, requireFinish, retryAsEvents } from 'cleanturn';
 *
 * defer(() => streamFromProvider())
 *   .pipe(
 *     requireFinish(),
 *     retryAsEvents({ count: 3, delay: backoff({ initialDelay: 250 }) }),
 *     cleanTurn({ turnId: 'turn-42' }),
 *   )
 *   .subscribe(render);
 * ```
 *
 * @see {@link backoff} for exponential delays with jitter.
 * @param options The cap, delay and retry predicate.
 * @returns An operator that emits the source's values and a `retry` event before each new attempt.
 */
export function retryAsEvents<T>(
  options: RetryAsEventsOptions = {},
  // `T` comes from the source only: inferred from what follows (`cleanTurn` reads `ProviderEvent`), it would
  // lose the `retry` member and no longer match the source.
): OperatorFunction<T, NotInferred<T> | RetryEvent> {
  const {
    count = Number.POSITIVE_INFINITY,
    delay,
    resetOnSuccess = false,
    shouldRetry = isRetryable,
  } = options;
  const describe = options.reason ?? describeError;
  return function retryAsEventsOperator(source) {
    return new Observable<T | RetryEvent>((subscriber) => {
      // Retries since the start (or since the last value, with resetOnSuccess).
      let retryCount = 0;
      // Every failed attempt so far.
      const failures: FailedAttempt[] = [];
      // Values the live attempt has emitted.
      let emitted = 0;
      // The live attempt's subscription.
      let inner: Subscription | null = null;
      // A pending delay before the next attempt.
      let waiting: Subscription | null = null;

      const resubscribe = (error: unknown, reason: string) => {
        subscriber.next({ type: 'retry', reason, error });
        // A consumer may unsubscribe on the retry event itself (take, takeWhile): start nothing then.
        if (!subscriber.closed) subscribeAttempt();
      };

      const onError = (error: unknown): { retry: false } | { retry: true; reason: string } => {
        const reason = safely(() => describe(error));
        if (!reason.ok) {
          subscriber.error(reason.error);
          return { retry: false };
        }
        failures.push({ attempt: failures.length + 1, reason: reason.value, error, emitted });
        const wanted = safely(() => shouldRetry(error, retryCount + 1));
        if (!wanted.ok) {
          subscriber.error(wanted.error);
          return { retry: false };
        }
        if (!wanted.value) {
          subscriber.error(error);
          return { retry: false };
        }
        if (retryCount >= count) {
          subscriber.error(new RetriesExhaustedError(failures.slice()));
          return { retry: false };
        }
        retryCount++;
        return { retry: true, reason: reason.value };
      };

      // Runs `next` after the configured delay (at once without one).
      const afterDelay = (error: unknown, next: () => void): void => {
        if (delay === undefined) {
          next();
          return;
        }
        let wait: Observable<unknown>;
        try {
          wait = typeof delay === 'number' ? timer(delay) : from(delay(error, retryCount)).pipe(take(1));
        } catch (thrown) {
          subscriber.error(thrown);
          return;
        }
        let fired = false;
        const subscription = wait.subscribe({
          next() {
            fired = true;
            waiting = null;
            next();
          },
          error: (thrown) => subscriber.error(thrown),
          complete() {
            if (!fired) subscriber.complete();
          },
        });
        // A notifier that fired synchronously has already started the next attempt, which may be waiting on a
        // delay of its own by now: keep that one.
        if (!fired) waiting = subscription;
      };

      const subscribeAttempt = (): void => {
        emitted = 0;
        // Undefined while the source is still inside `subscribe` (a synchronous error).
        let attemptSubscription: Subscription | undefined;
        // A retry decided during a synchronous error, run once `subscribe` has returned.
        let deferred: (() => void) | null = null;
        attemptSubscription = subscribeLinked(source, subscriber, {
          next(value) {
            emitted++;
            if (resetOnSuccess) retryCount = 0;
            subscriber.next(value);
          },
          error(error) {
            const decision = onError(error);
            if (!decision.retry) return;
            const retry = () => afterDelay(error, () => resubscribe(error, decision.reason));
            if (attemptSubscription === undefined) {
              deferred = retry;
            } else {
              inner = null;
              retry();
            }
          },
          complete() {
            subscriber.complete();
          },
        });
        if (deferred === null) {
          inner = attemptSubscription;
        } else {
          attemptSubscription.unsubscribe();
          (deferred as () => void)();
        }
      };

      subscribeAttempt();
      return () => {
        inner?.unsubscribe();
        waiting?.unsubscribe();
        inner = null;
        waiting = null;
      };
    });
  };
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === 'string') return error;
  return String(error);
}

function safely<R>(fn: () => R): { ok: true; value: R } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error };
  }
}
