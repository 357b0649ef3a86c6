import {
  defer,
  from,
  identity,
  Observable,
  type ObservableInput,
  type OperatorFunction,
  type Subscription,
  take,
} from 'rxjs';
import {
  describeError,
  type FailedAttempt,
  isRetryable,
  RetriesExhaustedError,
  RetryBudgetExhaustedError,
} from './errors.js';
import { readProperty, readString } from './internal/describeError.js';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { NotInferred } from './internal/types.js';
import { wait as longWait } from './internal/wait.js';
import type { RetryBudget } from './retryBudget.js';
import type { RetryEvent, RetryFacts } from './types.js';

/** Options of {@link retryAsEvents}; `count`, `delay` and `resetOnSuccess` mean what they mean in RxJS `retry`. */
export interface RetryAsEventsOptions {
  /**
   * How many times to resubscribe after an error (so at most `count + 1` attempts). Default: `Infinity`, as in
   * RxJS; a turn should always set a cap.
   */
  count?: number;
  /**
   * Wait before each resubscription: milliseconds, or a function of the error and the retry number (1 for the
   * first retry) that returns milliseconds or an observable whose first value triggers the retry. If that
   * observable completes without a value, the result completes (after the `retry` event); if it errors, the result
   * errors. The `retry` event says how long the wait is (`delay`) when it is known: a number, or an observable with a
   * numeric `delay` property, as {@link backoff}'s timers have. Default: resubscribe at once (`delay: 0` on the
   * event).
   */
  delay?: number | ((error: unknown, retryCount: number) => number | ObservableInput<unknown>);
  /** Reset the retry count when the source emits. Beware: any streamed event counts, which lifts the cap per turn. */
  resetOnSuccess?: boolean;
  /**
   * Whether an error deserves another attempt. Default: {@link isRetryable}, that is, everything except
   * errors that carry `retryable: false`. An error that is not retried passes through unchanged.
   */
  shouldRetry?: (error: unknown, retryCount: number) => boolean;
  /** The `reason` of the `retry` event for an error. Default: the error's message. */
  reason?: (error: unknown) => string;
  /**
   * A retry budget shared with other turns (see {@link retryBudget}): each subscription deposits once, before its
   * first attempt, and each retry that `shouldRetry` and `count` allow is withdrawn before its delay. When the budget
   * refuses, the result errors at once with a {@link RetryBudgetExhaustedError}, without waiting for the delay.
   * Default: none, only `count` caps the retries.
   */
  budget?: RetryBudget;
}

/**
 * How many failure records {@link retryAsEvents} keeps: the most recent ones. A {@link RetriesExhaustedError} carries
 * at most this many in `attempts`, and its `failures` says how many attempts failed in all.
 */
const KEPT_FAILURES = 32;

/**
 * Retries an errored source like RxJS `retry`, but emits a `retry` event the moment an attempt fails instead of
 * splicing the next attempt silently onto the last.
 *
 * The event comes before the wait, so that every screen drops the abandoned attempt's output at once and can say
 * "retrying in 3 s". Everything the wait depends on is decided first: the cap, `shouldRetry`, the budget and the
 * delay; the event then carries the facts of the retry ({@link RetryFacts}): `delay` (milliseconds until the next
 * attempt starts, when known), `failedAttempt`, `outputStarted` (the failed attempt had emitted values),
 * `retryCount`, `maxRetries` (absent without a cap), the error's class (`errorName`) and HTTP `status`.
 *
 * Downstream, {@link tagAttempts} numbers the attempts from these events and {@link resetOnRetry} turns them
 * into resets. Past the cap it errors with a {@link RetriesExhaustedError} that carries the failed attempts
 * (each one's error, reason and how much it had emitted): the 32 most recent, and with `resetOnSuccess` only
 * those since the count was last reset; its `failures` counts them all. An error that `shouldRetry` declines
 * passes through as it is.
 *
 * With a `budget` shared by many turns ({@link retryBudget}), each subscription deposits once before its first
 * attempt and each retry is withdrawn before its delay; when the budget refuses, the result errors at once with a
 * {@link RetryBudgetExhaustedError} that carries the same records, and the delay is never asked for.
 *
 * As in RxJS, a number is the `count` (`retryAsEvents(3)` is `retryAsEvents({ count: 3 })`), and a count of 0
 * or less returns the source itself: its errors pass through unchanged, neither retried nor wrapped (with a
 * `budget`, each subscription still deposits: a turn that is never retried is load all the same).
 *
 * ```text
 * source 1: -a-#
 * source 2: --c-f-|
 *           retryAsEvents({ count: 2 })
 * result:   -a-r-c-f-|
 *
 * where
 *   a = text "Refunding the dam"
 *   # = error: Error (connection reset)
 *   c = text "Refund started."
 *   f = finish stop
 *   r = retry "connection reset", in 0 ms (retry 1 of 2)
 * ```
 *
 * Every case of `marbles/retryAsEvents.marbles.ts`, with pictures: `docs/operators/retryAsEvents.md`.
 *
 * State: the retry count, the number of the live attempt, the most recent failed attempts, the live
 * subscription and the pending delay (a budget keeps its own state, shared by the turns). A source that fails
 * synchronously is resubscribed in a loop, not by recursion, so thousands of synchronous failures in a row (also
 * with a delay notifier that emits synchronously, such as `of(0)`) do not grow the stack.
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
 * @see {@link backoff} for exponential delays with jitter; {@link retryBudget} for a cap shared by many turns.
 * @param options The cap, delay, retry predicate and budget.
 * @returns An operator that emits the source's values and a `retry` event before each new attempt.
 */
export function retryAsEvents<T>(
  options?: RetryAsEventsOptions,
  // `T` comes from the source only: inferred from what follows (`cleanTurn` reads `ProviderEvent`), it would
  // lose the `retry` member and no longer match the source.
): OperatorFunction<T, NotInferred<T> | RetryEvent>;
/**
 * Retries an errored source at most `count` times, like RxJS `retry(count)`, and emits a `retry` event before
 * each resubscription: `retryAsEvents(3)` is `retryAsEvents({ count: 3 })`. A count of 0 or less returns the
 * source itself.
 *
 * @param count How many times to resubscribe at most. Default: `Infinity`, as in RxJS.
 * @returns An operator that emits the source's values and a `retry` event before each new attempt.
 */
export function retryAsEvents<T>(count?: number): OperatorFunction<T, NotInferred<T> | RetryEvent>;
export function retryAsEvents<T>(
  countOrOptions: number | RetryAsEventsOptions = {},
): OperatorFunction<T, NotInferred<T> | RetryEvent> {
  const options: RetryAsEventsOptions =
    typeof countOrOptions === 'object' && countOrOptions !== null
      ? countOrOptions
      : { count: countOrOptions };
  const {
    count = Number.POSITIVE_INFINITY,
    delay,
    resetOnSuccess = false,
    shouldRetry = isRetryable,
    budget,
  } = options;
  // As RxJS `retry` does (`count <= 0 ? identity : …`): nothing to retry, so the source as it is. A turn that is
  // never retried is still load that a budget is a share of: it deposits.
  if (count <= 0) {
    if (budget === undefined) return identity;
    return function depositOperator(source) {
      return defer(() => {
        budget.deposit();
        return source;
      });
    };
  }
  const describe = options.reason ?? describeError;
  return function retryAsEventsOperator(source) {
    return new Observable<T | RetryEvent>((subscriber) => {
      // Retries since the start (or since the last value, with resetOnSuccess).
      let retryCount = 0;
      // The number of the live attempt, 1 for the first; never reset.
      let attempt = 0;
      // The most recent failed attempts (at most KEPT_FAILURES; with resetOnSuccess, since the last reset).
      let failures: FailedAttempt[] = [];
      // Values the live attempt has emitted.
      let emitted = 0;
      // The live attempt's subscription.
      let inner: Subscription | null = null;
      // A pending delay before the next attempt.
      let waiting: Subscription | null = null;
      // Whether the loop that starts attempts is running (further down the stack).
      let looping = false;
      // Whether the loop should start one more attempt when the current one has returned.
      let startAgain = false;

      // Starts the next attempt, and again after each one that asks for another before it has returned (a
      // synchronous failure): a loop in place of a recursion that would grow the stack with every attempt.
      const start = (): void => {
        if (looping) {
          startAgain = true;
          return;
        }
        looping = true;
        try {
          do {
            startAgain = false;
            subscribeAttempt();
          } while (startAgain && !subscriber.closed);
        } finally {
          looping = false;
        }
      };

      const onError = (error: unknown): { retry: false } | { retry: true; reason: string } => {
        const reason = safely(() => describe(error));
        if (!reason.ok) {
          subscriber.error(reason.error);
          return { retry: false };
        }
        failures.push({ attempt, reason: reason.value, error, emitted });
        if (failures.length > KEPT_FAILURES) failures.shift();
        const wanted = safely(() => shouldRetry(error, retryCount + 1));
        if (!wanted.ok) {
          subscriber.error(wanted.error);
          return { retry: false };
        }
        if (!wanted.value) {
          subscriber.error(error);
          return { retry: false };
        }
        if (!(retryCount < count)) {
          // Every attempt so far has failed: `attempt` of them, of which `failures` holds the most recent.
          subscriber.error(new RetriesExhaustedError(failures, attempt));
          return { retry: false };
        }
        // Withdrawn before the delay: a refused retry is not waited for.
        if (budget !== undefined) {
          const allowed = safely(() => budget.tryWithdraw());
          if (!allowed.ok) {
            subscriber.error(allowed.error);
            return { retry: false };
          }
          if (!allowed.value) {
            subscriber.error(new RetryBudgetExhaustedError(failures, attempt));
            return { retry: false };
          }
        }
        retryCount++;
        return { retry: true, reason: reason.value };
      };

      // Announces the retry at the moment of the failure, then starts the next attempt after the wait. The wait is
      // asked for first, so that the event can say how long it is.
      const announceAndWait = (
        error: unknown,
        reason: string,
        failedAttempt: number,
        outputStarted: boolean,
      ) => {
        let wait: Observable<unknown> | undefined;
        let ms: number | undefined = 0;
        if (delay !== undefined) {
          try {
            const asked = typeof delay === 'number' ? delay : delay(error, retryCount);
            if (typeof asked === 'number') {
              ms = asked;
              wait = longWait(asked);
            } else {
              ms = knownDelay(asked);
              wait = from(asked).pipe(take(1));
            }
          } catch (thrown) {
            subscriber.error(thrown);
            return;
          }
        }
        subscriber.next({
          type: 'retry',
          reason,
          error,
          ...retryFacts(error, { delay: ms, failedAttempt, outputStarted, retryCount, count }),
        });
        // A consumer may unsubscribe on the retry event itself (take, takeWhile): start nothing then.
        if (subscriber.closed) return;
        if (wait === undefined) {
          start();
          return;
        }
        let fired = false;
        const subscription = wait.subscribe({
          next() {
            fired = true;
            waiting = null;
            start();
          },
          error: (thrown) => subscriber.error(thrown),
          complete() {
            if (!fired) subscriber.complete();
          },
        });
        // A notifier that fired synchronously is done, and may have started the next attempt, which may be
        // waiting on a delay of its own by now: keep that one.
        if (!fired) waiting = subscription;
      };

      const subscribeAttempt = (): void => {
        attempt++;
        emitted = 0;
        // Undefined while the source is still inside `subscribe` (a synchronous error).
        let attemptSubscription: Subscription | undefined;
        // A retry decided during a synchronous error, run once `subscribe` has returned.
        let deferred: (() => void) | null = null;
        attemptSubscription = subscribeLinked(source, subscriber, {
          next(value) {
            emitted++;
            if (resetOnSuccess) {
              retryCount = 0;
              // The count starts again, and so do the records: the failures before this value are history.
              if (failures.length > 0) failures = [];
            }
            subscriber.next(value);
          },
          error(error) {
            const decision = onError(error);
            if (!decision.retry) return;
            const failedAttempt = attempt;
            const outputStarted = emitted > 0;
            const retry = () => announceAndWait(error, decision.reason, failedAttempt, outputStarted);
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
          // Inside the loop of `start`: a retry without delay (or with a synchronous one) only asks the loop
          // for the next attempt.
          (deferred as () => void)();
        }
      };

      // The first attempt of this subscription is load that the budget is a share of.
      if (budget !== undefined) {
        const deposited = safely(() => budget.deposit());
        if (!deposited.ok) {
          subscriber.error(deposited.error);
          return;
        }
      }
      start();
      return () => {
        inner?.unsubscribe();
        waiting?.unsubscribe();
        inner = null;
        waiting = null;
        failures = [];
      };
    });
  };
}

/** How long a delay notifier waits, when it says so: a finite `delay` property >= 0 (as `backoff`'s timers have). */
function knownDelay(notifier: unknown): number | undefined {
  const ms = readProperty(notifier, 'delay');
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** The facts of a retry for its event: only those that are known. */
function retryFacts(
  error: unknown,
  known: {
    delay: number | undefined;
    failedAttempt: number;
    outputStarted: boolean;
    retryCount: number;
    count: number;
  },
): RetryFacts {
  const facts: RetryFacts = {};
  if (known.delay !== undefined) facts.delay = known.delay;
  facts.failedAttempt = known.failedAttempt;
  facts.outputStarted = known.outputStarted;
  facts.retryCount = known.retryCount;
  if (Number.isFinite(known.count)) facts.maxRetries = known.count;
  const name = readString(error, 'name');
  if (name !== undefined && name !== '') facts.errorName = name;
  const status = readProperty(error, 'status');
  if (typeof status === 'number' && Number.isInteger(status)) facts.status = status;
  return facts;
}

function safely<R>(fn: () => R): { ok: true; value: R } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error };
  }
}
