import {
  defer,
  from,
  identity,
  Observable,
  type ObservableInput,
  type OperatorFunction,
  type Subscriber,
  type Subscription,
  take,
} from 'rxjs';
import { describeError, isRetryable } from './errors.js';
import { Resubscriber } from './internal/resubscriber.js';
import {
  type AskedWait,
  askWait,
  FailureLog,
  type RetriedFailure,
  type RetryPolicy,
  refusalOf,
  retryEvent,
  safely,
  statedDelay,
} from './internal/retryDecisions.js';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { NotInferred } from './internal/types.js';
import { wait as longWait } from './internal/wait.js';
import type { RetryBudget } from './retryBudget.js';
import type { RetryEvent } from './types.js';

/**
 * Options of {@link retryAsEvents}; `count`, `delay` and `resetOnSuccess` mean what they mean in RxJS `retry`.
 *
 * @inline
 */
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
   * refuses, the result errors at once with a `retries-exhausted` {@link TurnError} (its `limit` is `budget`), without waiting for the delay.
   * Default: none, only `count` caps the retries.
   */
  budget?: RetryBudget;
}

/**
 * How many failure records {@link retryAsEvents} keeps: the most recent ones. A `retries-exhausted` {@link TurnError} carries
 * at most this many in `attempts`, and its `failures` says how many attempts failed in all.
 */
const KEPT_FAILURES = 32;

/**
 * Retries an errored source like RxJS `retry`, but emits a `retry` event the moment an attempt fails instead of
 * splicing the next attempt silently onto the last.
 *
 * The event comes before the wait, so that every screen drops the abandoned attempt's output at once and can say
 * "retrying in 3 s". Everything the wait depends on is decided first: the cap, `shouldRetry`, the budget and the
 * delay; the event then carries the facts of the retry (`RetryFacts`): `delay` (milliseconds until the next
 * attempt starts, when known), `failedAttempt`, `outputStarted` (the failed attempt had emitted values),
 * `retryCount`, `maxRetries` (absent without a cap), the error's class (`errorName`) and HTTP `status`.
 *
 * Downstream, {@link tagAttempts} numbers the attempts from these events and {@link resetOnRetry} turns them
 * into resets. Past the cap it errors with a `retries-exhausted` {@link TurnError} that carries the failed attempts
 * (each one's error, reason and how much it had emitted): the 32 most recent, and with `resetOnSuccess` only
 * those since the count was last reset; its `failures` counts them all. An error that `shouldRetry` declines
 * passes through as it is.
 *
 * With a `budget` shared by many turns ({@link retryBudget}), each subscription deposits once before its first
 * attempt and each retry is withdrawn before its delay; when the budget refuses, the result errors at once with a
 * `retries-exhausted` {@link TurnError} (its `limit` is `budget`) that carries the same records, and the delay is never asked for.
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
  const policy: RetryPolicy = { count, delay, resetOnSuccess, shouldRetry, describe, budget };
  return function retryAsEventsOperator(source) {
    return new Observable<T | RetryEvent>((subscriber) => {
      const session = new RetrySession(policy, source, subscriber);
      if (!session.deposit()) return;
      session.start();
      return () => session.close();
    });
  };
}

/**
 * One subscription of {@link retryAsEvents}: its attempts one after another, what the live one has emitted, the
 * records of the failed ones, the wait before the next one and the loop that starts them.
 */
class RetrySession<T> {
  /** Retries since the start (or since the last value, with resetOnSuccess). */
  #retryCount = 0;
  /** The number of the live attempt, 1 for the first; never reset. */
  #attempt = 0;
  /** Values the live attempt has emitted. */
  #emitted = 0;
  /** The most recent failed attempts (with resetOnSuccess, since the last reset). */
  readonly #failures = new FailureLog(KEPT_FAILURES);
  /** The live attempt's subscription. */
  #inner: Subscription | null = null;
  /** Starts attempts, after the wait each retry asks for; one more after each that asks before it has returned. */
  readonly #attempts: Resubscriber;

  /** A subscription to `source` that emits into `subscriber`; nothing starts before {@link start}. */
  constructor(
    private readonly policy: RetryPolicy,
    private readonly source: Observable<T>,
    private readonly subscriber: Subscriber<T | RetryEvent>,
  ) {
    this.#attempts = new Resubscriber(() => this.#subscribeAttempt(), subscriber);
  }

  /**
   * Deposits in the budget, if any: the first attempt of this subscription is load that the budget is a share of.
   * False when the deposit threw, and the result errored with it.
   */
  deposit(): boolean {
    const { budget } = this.policy;
    if (budget === undefined) return true;
    const deposited = safely(() => budget.deposit());
    if (!deposited.ok) this.subscriber.error(deposited.error);
    return deposited.ok;
  }

  /**
   * Starts the next attempt, and again after each one that asks for another before it has returned (a
   * synchronous failure): a loop in place of a recursion that would grow the stack with every attempt.
   */
  start(): void {
    this.#attempts.run();
  }

  /** Ends the live attempt or the wait, and forgets the records. */
  close(): void {
    this.#inner?.unsubscribe();
    this.#attempts.close();
    this.#inner = null;
    this.#failures.clear();
  }

  /** Subscribes to the source for the next attempt; the retry of a synchronous failure runs once that returned. */
  #subscribeAttempt(): void {
    this.#attempt++;
    this.#emitted = 0;
    const live: LiveAttempt = { subscription: undefined, retry: null };
    live.subscription = subscribeLinked(this.source, this.subscriber, {
      next: (value) => this.#onValue(value),
      error: (error: unknown) => this.#onError(live, error),
      complete: () => this.subscriber.complete(),
    });
    if (live.retry === null) {
      this.#inner = live.subscription;
      return;
    }
    live.subscription.unsubscribe();
    // Inside the loop of `start`: a retry without delay (or with a synchronous one) only asks the loop for the
    // next attempt.
    this.#retry(live.retry);
  }

  /** A value of the live attempt, passed on; with resetOnSuccess, the count and the records start again. */
  #onValue(value: T): void {
    this.#emitted++;
    if (this.policy.resetOnSuccess) {
      this.#retryCount = 0;
      // The failures before this value are history.
      this.#failures.clear();
    }
    this.subscriber.next(value);
  }

  /** The live attempt failed: the result errors, or the failure is retried (a synchronous one after `subscribe`). */
  #onError(live: LiveAttempt, error: unknown): void {
    const verdict = this.#judge(error);
    if (!verdict.retry) {
      this.subscriber.error(verdict.error);
      return;
    }
    const failure: RetriedFailure = {
      error,
      reason: verdict.reason,
      failedAttempt: this.#attempt,
      outputStarted: this.#emitted > 0,
    };
    if (live.subscription === undefined) {
      live.retry = failure;
    } else {
      this.#inner = null;
      this.#retry(failure);
    }
  }

  /**
   * Whether the live attempt's failure is retried: its reason, counted as a retry; else the error the result ends
   * with. The failure is recorded once its reason is known, so that the error past the cap carries it.
   */
  #judge(error: unknown): { retry: true; reason: string } | { retry: false; error: unknown } {
    const { describe } = this.policy;
    const reason = safely(() => describe(error));
    if (!reason.ok) return { retry: false, error: reason.error };
    this.#failures.record({ attempt: this.#attempt, reason: reason.value, error, emitted: this.#emitted });
    const refusal = refusalOf(this.policy, error, this.#retryCount, this.#failures.records, this.#attempt);
    if (refusal !== undefined) return { retry: false, error: refusal.error };
    this.#retryCount++;
    return { retry: true, reason: reason.value };
  }

  /**
   * Announces the retry at the moment of the failure, then starts the next attempt after the wait. The wait is
   * asked for first, so that the event can say how long it is.
   */
  #retry(failure: RetriedFailure): void {
    const wait = this.#askWait(failure.error);
    if (wait === null) return;
    const { count } = this.policy;
    this.subscriber.next(retryEvent(failure, { delay: wait.ms, retryCount: this.#retryCount, count }));
    // A consumer may unsubscribe on the retry event itself (take, takeWhile): start nothing then.
    if (this.subscriber.closed) return;
    this.#attempts.again(wait.notifier);
  }

  /**
   * The wait before the next attempt (`notifier` undefined: none) and the length the event states; null when the
   * `delay` function threw, and the result errored with it.
   */
  #askWait(error: unknown): { ms: number | undefined; notifier: Observable<unknown> | undefined } | null {
    try {
      const asked = askWait(this.policy.delay, error, this.#retryCount);
      return { ms: statedDelay(asked), notifier: notifierOf(asked) };
    } catch (thrown) {
      this.subscriber.error(thrown);
      return null;
    }
  }
}

/**
 * An attempt while the source subscribes: its subscription once `subscribe` has returned (undefined before: an
 * error then is synchronous), and the retry such an error decided, to run once it has.
 */
interface LiveAttempt {
  subscription: Subscription | undefined;
  retry: RetriedFailure | null;
}

/** The wait as an Observable whose first value starts the next attempt: a timer, or the notifier's first value. */
function notifierOf(asked: AskedWait): Observable<unknown> | undefined {
  if (asked.kind === 'none') return undefined;
  return asked.kind === 'ms' ? longWait(asked.ms) : from(asked.notifier).pipe(take(1));
}
