import { UsageError } from './errors.js';
import { describeValue } from './internal/describeValue.js';

/**
 * Options of {@link retryBudget}; the names and defaults are those of Finagle's `RetryBudget`.
 *
 * @inline
 */
export interface RetryBudgetOptions {
  /**
   * The sliding window, in milliseconds: a first attempt or a retry counts for this long (give or take a tenth of
   * it: the window moves in tenths), then is forgotten. From 1 ms (a marble spec's few frames) to 86 400 000 (a
   * day); Finagle allows 1 to 60 s. Default 10 000.
   */
  ttlMs?: number;
  /**
   * Retries allowed per first attempt in the window: 0.2 lets one turn in five retry once; 2 lets every turn retry
   * twice. From 0 to 1000, as in Finagle. Default 0.2.
   */
  percentCanRetry?: number;
  /**
   * A floor: retries allowed per second whatever the first attempts, for a service that has just started or sees
   * few turns. It is a reserve of `minRetriesPerSec × ttlMs / 1000` retries per window, there from the start (as in
   * Finagle); a fraction is allowed. From 0 to 1 000 000. Default 10.
   */
  minRetriesPerSec?: number;
  /**
   * The clock, in milliseconds. Default `performance.now()`: monotonic, so that a wall clock set ahead or back
   * (NTP, a laptop waking up) changes nothing. Inside `TestScheduler.run`, pass the virtual clock:
   * `now: () => scheduler.now()`, or `() => asyncScheduler.now()`, which is the virtual time inside a run. A
   * reading a little earlier than the latest (less than `ttlMs`) counts as the latest: the window stands still
   * until the clock has caught up; a reading more than `ttlMs` earlier is a clock set back, and the window goes
   * on from it. Each reading costs at most ten steps, however far the clock jumps.
   */
  now?: () => number;
}

/**
 * What a {@link RetryBudget} holds now, for metrics. A snapshot: changing it changes nothing.
 *
 * @inline
 */
export interface RetryBudgetState {
  /** First attempts in the window (deposits). */
  deposits: number;
  /** Retries allowed in the window (withdrawals). */
  withdrawals: number;
  /** How many retries the budget would allow now, one after the other. */
  available: number;
  /** Retries refused since the budget was made (a running total, not windowed). */
  refusals: number;
}

/**
 * A retry budget shared by many turns: what {@link retryAsEvents} (`budget`), `turnPipeline` (`retry.budget`) and
 * `streamTurn` (`budget`) take. {@link retryBudget} makes one; a budget of your own (one shared by several
 * processes, say) implements the same three methods.
 */
export interface RetryBudget {
  /** Counts a first attempt: called once per subscription of a retried turn, before its first attempt. */
  deposit(): void;
  /** Asks for one retry: `true` counts it (a withdrawal), `false` refuses it and leaves the balance untouched. */
  tryWithdraw(): boolean;
  /** The numbers of the window now, for metrics. */
  state(): RetryBudgetState;
}

/** The window is kept in this many slices, as Finagle's `WindowedAdder` keeps it. */
const SLICES = 10;

/** The bounds of `ttlMs`: 1 ms (a marble spec's few frames) to a day. */
const MIN_TTL_MS = 1;
const MAX_TTL_MS = 86_400_000;
/** The largest `percentCanRetry`, as in Finagle. */
const MAX_PERCENT_CAN_RETRY = 1000;
/** The largest `minRetriesPerSec`: the counts stay exact integers far below 2^53. */
const MAX_RETRIES_PER_SEC = 1_000_000;

/**
 * Tolerance of the balance: `0.29 × 100` is `28.999…` in binary floating point and must still buy the 29th retry
 * (Finagle counts in integer thousandths for the same reason).
 */
const EPSILON = 1e-9;

/**
 * A retry budget shared by many turns: retries may be at most a share of first attempts over a sliding window,
 * plus a small floor per second. Pass one object to every turn of a service, so that a flaky network cannot multiply
 * the load (and the bill) by the per-turn cap exactly when the provider is struggling.
 *
 * The scheme is Finagle's `RetryBudget`: each first attempt deposits, each retry withdraws, both count for `ttlMs`,
 * and a retry is allowed while `minRetriesPerSec × ttlMs / 1000 + percentCanRetry × deposits − withdrawals ≥ 1`
 * over the window. So in any window, retries ≤ `percentCanRetry ×` first attempts `+ minRetriesPerSec × ttlMs /
 * 1000`: the load is at most `1 + percentCanRetry` times the first attempts (plus the floor), whatever the per-turn
 * cap and however badly the provider fails, and the budget recovers with time alone.
 *
 * gRPC's retry throttling is a different scheme: a token bucket without a clock (`maxTokens`, `tokenRatio`) in
 * which each failed attempt takes a token and each success adds `tokenRatio`, and retries are allowed while more
 * than `maxTokens / 2` tokens are left. It follows the failure ratio, not the volume: it stops retrying altogether
 * once about half of the attempts fail, and only successes bring it back. Finagle's follows what retries cost (a
 * share of the first attempts) and needs only the two moments `retryAsEvents` sees (a turn starts, a retry is
 * asked for), not a success, which a streamed turn reports only at its finish, minutes later.
 *
 * The clock is `performance.now()` by default: monotonic, so a wall clock set a day ahead or back neither empties
 * nor freezes the window. Pass `now` for any other clock: inside `TestScheduler.run`, `now: () => scheduler.now()`
 * (or `() => asyncScheduler.now()`, the virtual time inside a run), as the marble spec does. A budget keeps to one
 * clock: a reading a little earlier than the latest counts as the latest, a reading more than `ttlMs` earlier is a
 * clock set back and the window goes on from it; however far the clock jumps, a reading costs at most ten steps.
 *
 * ```text
 * source 1: -a-#
 * source 2: --b-#
 *           retryAsEvents({ count: 3, budget: retryBudget({ ttlMs: 10, percentCanRetry: 0, minRetriesPerSec: 100 }) })
 * result:   -a-r-b-#
 *
 * where
 *   a = text "Refunding the dam"
 *   # = error: Error (connection reset)
 *   b = text "Refund"
 *   r = retry "connection reset", in 0 ms (retry 1 of 3)
 *   # = error: TurnError retries-exhausted (retry budget exhausted: gave up after 2 attempt(s): connection reset)
 * ```
 *
 * Every case of `marbles/retryBudget.marbles.ts`, with pictures: `docs/operators/retryBudget.md`.
 *
 * State, as in Finagle: the first attempts and the retries of each tenth of the window (20 numbers; the memory does
 * not grow with the load), the current tenth, the refusals so far, and the latest time read. There are no timers:
 * the window moves when the budget is used, from the clock. Where this differs from Finagle: `ttlMs` may be 1 ms to
 * a day (a marble spec uses a few frames), the floor may be a fraction, and the balance is kept in floating point
 * with a tolerance instead of integer thousandths.
 *
 * ## Example
 * ```ts
 * import { defer } from 'rxjs';
 * import { backoff, cleanTurn, requireFinish, retryAsEvents, retryBudget } from 'cleanturn';
 *
 * // Made once for the whole service: retries at most 20% of the turns started in the last 10 s, plus 10 per second.
 * const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0.2, minRetriesPerSec: 10 });
 *
 * // Every turn takes the same budget; a refused retry fails the turn at once with a retries-exhausted TurnError (limit budget).
 * defer(() => streamFromProvider())
 *   .pipe(
 *     requireFinish(),
 *     retryAsEvents({ count: 3, delay: backoff(), budget }),
 *     cleanTurn({ turnId: 'turn-42' }),
 *   )
 *   .subscribe(render);
 *
 * // For metrics: first attempts and retries in the window, retries available now, refusals so far.
 * const { deposits, withdrawals, available, refusals } = budget.state();
 * console.log({ deposits, withdrawals, available, refusals });
 * ```
 *
 * @see {@link retryAsEvents}, which deposits and withdraws; the `retries-exhausted` {@link TurnError} (its `limit` is `budget`), its refusal.
 * @param options The window, the share of first attempts, the floor and the clock.
 * @returns A budget to pass to every turn that shares it.
 * @throws UsageError when an option is not a number in its range, or `now` is not a function (and, from `deposit`,
 *   `tryWithdraw` and `state`, when `now` returns something other than a finite number).
 */
export function retryBudget(options: RetryBudgetOptions = {}): RetryBudget {
  const { ttlMs = 10_000, percentCanRetry = 0.2, minRetriesPerSec = 10 } = options;
  check('ttlMs', ttlMs, MIN_TTL_MS, MAX_TTL_MS, 'a number of milliseconds from 1 to 86,400,000 (a day)');
  check('percentCanRetry', percentCanRetry, 0, MAX_PERCENT_CAN_RETRY, 'a number from 0 to 1000');
  check('minRetriesPerSec', minRetriesPerSec, 0, MAX_RETRIES_PER_SEC, 'a number from 0 to 1,000,000');
  if (options.now !== undefined && typeof options.now !== 'function')
    throw new UsageError(
      'retryBudget',
      'now',
      `must be a function that returns milliseconds, not ${describeValue(options.now)}`,
    );
  const window = new RetryWindow(ttlMs, options.now ?? monotonicNow);
  // The floor's retries per window, there whatever the first attempts.
  const reserve = (minRetriesPerSec * ttlMs) / 1000;
  // How many retries the window's totals allow (fractional).
  const balance = () => reserve + percentCanRetry * window.deposited() - window.withdrawn();
  // Retries refused since the budget was made.
  let refusals = 0;
  return {
    deposit() {
      window.count('deposits', window.advance());
    },
    tryWithdraw() {
      const i = window.advance();
      if (balance() + EPSILON < 1) {
        refusals++;
        return false;
      }
      window.count('withdrawals', i);
      return true;
    },
    state() {
      window.advance();
      const available = Math.max(0, Math.floor(balance() + EPSILON));
      return { deposits: window.deposited(), withdrawals: window.withdrawn(), available, refusals };
    },
  };
}

/** A sliding window of `SLICES` slices over `ttlMs`: first attempts and retries per slice, in two rings. */
class RetryWindow {
  /** The length of one slice of the window, in milliseconds. */
  readonly #width: number;
  /** First attempts per slice; `#head` is the current slice. */
  readonly #deposits = new Array<number>(SLICES).fill(0);
  /** Retries allowed per slice, in the same ring. */
  readonly #withdrawals = new Array<number>(SLICES).fill(0);
  /** The ring index of the current slice. */
  #head = 0;
  /** The latest time read (since the clock was last set back), or undefined before the first reading. */
  #latest: number | undefined;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {
    this.#width = ttlMs / SLICES;
  }

  /** Counts one in slice `i` of a ring (the current one, from `advance`). */
  count(ring: 'deposits' | 'withdrawals', i: number): void {
    const slices = ring === 'deposits' ? this.#deposits : this.#withdrawals;
    slices[i] = (slices[i] as number) + 1;
  }

  /** First attempts in the window. */
  deposited(): number {
    return sum(this.#deposits);
  }

  /** Retries allowed in the window. */
  withdrawn(): number {
    return sum(this.#withdrawals);
  }

  /** Moves the window to the clock's time and returns the ring index of the current slice. */
  advance(): number {
    const time = this.now();
    if (typeof time !== 'number' || !Number.isFinite(time))
      throw new UsageError(
        'retryBudget',
        'now',
        `must return a finite number of milliseconds, not ${describeValue(time)}`,
      );
    const latest = this.#latest;
    if (latest === undefined || latest - time > this.ttlMs) {
      // The first reading, or a clock set back by more than a window: the window goes on from this reading.
      this.#latest = time;
      return this.#head;
    }
    if (time <= latest) return this.#head; // a little back (jitter) or no time at all: the window stands still
    // Clears the slices that have left the window since the last use: at most all of them, however long ago.
    const passed = Math.min(slicesBetween(latest, time, this.#width, this.ttlMs), SLICES);
    for (let k = 0; k < passed; k++) {
      this.#head = (this.#head + 1) % SLICES;
      this.#deposits[this.#head] = 0;
      this.#withdrawals[this.#head] = 0;
    }
    this.#latest = time;
    return this.#head;
  }
}

/** The total of a ring's slices. */
function sum(slices: readonly number[]): number {
  let total = 0;
  for (let i = 0; i < SLICES; i++) total += slices[i] as number;
  return total;
}

/** The default clock: monotonic, so that a wall clock set ahead or back changes nothing. */
function monotonicNow(): number {
  return performance.now();
}

/**
 * How many slice boundaries lie between two readings (`from` < `to`): exact while the slice numbers are safe
 * integers (any clock in milliseconds of this era); beyond, where a reading cannot tell one slice from the next,
 * the distance in slices, and a whole window once the readings are a window apart.
 */
function slicesBetween(from: number, to: number, width: number, ttlMs: number): number {
  const a = Math.floor(from / width);
  const b = Math.floor(to / width);
  if (Number.isSafeInteger(a) && Number.isSafeInteger(b)) return b - a;
  const apart = to - from;
  return apart >= ttlMs ? SLICES : Math.max(1, Math.floor(apart / width));
}

function check(name: string, value: unknown, min: number, max: number, what: string): void {
  if (typeof value !== 'number' || !(value >= min && value <= max))
    throw new UsageError('retryBudget', name, `must be ${what}, not ${describeValue(value)}`);
}
