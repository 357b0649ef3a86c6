import type { Observable, SchedulerLike } from 'rxjs';
import { checkOneOf, checkOption } from './internal/options.js';
import { wait as longWait } from './internal/wait.js';

/**
 * A wait of {@link backoff}: a timer that emits `0` once, and says how long it waits (`delay`, in milliseconds).
 *
 * @inline
 */
export type BackoffTimer = Observable<0> & { readonly delay: number };

/**
 * Options of {@link backoff}.
 *
 * @inline
 */
export interface BackoffOptions {
  /** The delay before the first retry, in milliseconds. Default 500. */
  initialDelay?: number;
  /** The largest delay, in milliseconds. Default 30 000. */
  maxDelay?: number;
  /** The growth factor per retry. Default 2. */
  factor?: number;
  /**
   * How randomness spreads the retries of many clients: `'full'` waits a random time in `[0, d]`, `'equal'` in
   * `[d/2, d]`, `'none'` exactly `d`, where `d` is the capped exponential delay. Default `'full'`.
   */
  jitter?: 'full' | 'equal' | 'none';
  /** A source of numbers in `[0, 1)`. Default `Math.random`. */
  random?: () => number;
  /** The scheduler of the timer. Default: the async scheduler (virtual time inside `TestScheduler.run`). */
  scheduler?: SchedulerLike;
}

/**
 * An exponential backoff with jitter, for the `delay` option of {@link retryAsEvents} (or RxJS `retry`).
 *
 * The capped delay for retry `n` (1-based) is `min(maxDelay, initialDelay × factor^(n−1))`; jitter then picks
 * the actual wait. Full jitter is the default: it spreads a crowd of clients best.
 *
 * ## Example
 * ```ts
 * import { backoff, retryAsEvents } from 'cleanturn';
 *
 * stream$.pipe(retryAsEvents({ count: 4, delay: backoff({ initialDelay: 250, maxDelay: 8000 }) }));
 * ```
 *
 * @param options Delays, growth and jitter.
 * @returns A delay function: `(error, retryCount) => timer`.
 */
export function backoff(options: BackoffOptions = {}): (error: unknown, retryCount: number) => BackoffTimer {
  const {
    initialDelay = 500,
    maxDelay = 30_000,
    factor = 2,
    jitter = 'full',
    random = Math.random,
    scheduler,
  } = options;
  checkOneOf('backoff', 'jitter', jitter, ['full', 'equal', 'none']);
  checkOption(initialDelay >= 0, 'backoff', 'initialDelay', 'a number >= 0', initialDelay);
  checkOption(maxDelay >= 0, 'backoff', 'maxDelay', 'a number >= 0', maxDelay);
  checkOption(factor >= 1, 'backoff', 'factor', 'a number >= 1', factor);
  return function backoffDelay(_error, retryCount) {
    const capped = Math.min(maxDelay, initialDelay * factor ** Math.max(0, retryCount - 1));
    const wait =
      jitter === 'full'
        ? random() * capped
        : jitter === 'equal'
          ? capped / 2 + (random() * capped) / 2
          : capped;
    const ms = Math.round(wait);
    const waiting = longWait(ms, scheduler);
    // The wait says how long it is, so that `retryAsEvents` can put it on the `retry` event before it starts.
    return Object.assign(waiting, { delay: ms });
  };
}
