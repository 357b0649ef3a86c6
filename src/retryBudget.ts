import { asyncScheduler } from 'rxjs';

/** Options of {@link retryBudget}; the names and defaults are those of Finagle's `RetryBudget`. */
export interface RetryBudgetOptions {
  /**
   * The sliding window, in milliseconds: a first attempt or a retry counts for this long (give or take a tenth of
   * it: the window moves in tenths), then is forgotten. Any finite number above 0 (Finagle: 1 to 60 s). Default
   * 10 000.
   */
  ttlMs?: number;
  /**
   * Retries allowed per first attempt in the window: 0.2 lets one turn in five retry once; 2 lets every turn retry
   * twice. Any finite number from 0. Default 0.2.
   */
  percentCanRetry?: number;
  /**
   * A floor: retries allowed per second whatever the first attempts, for a service that has just started or sees
   * few turns. It is a reserve of `minRetriesPerSec × ttlMs / 1000` retries per window, there from the start (as in
   * Finagle); a fraction is allowed. Any finite number from 0. Default 10.
   */
  minRetriesPerSec?: number;
  /**
   * The clock, in milliseconds. Default: RxJS's, `asyncScheduler.now()`, which is `Date.now()`, and the virtual time
   * inside `TestScheduler.run` (for a budget used inside the run). A clock that goes back is read as standing
   * still until it has caught up.
   */
  now?: () => number;
}

/** What a {@link RetryBudget} holds now, for metrics. A snapshot: changing it changes nothing. */
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
 * The clock is RxJS's by default, `asyncScheduler.now()`: `Date.now()`, and inside `TestScheduler.run` the virtual
 * time, so that a budget made and used inside a run slides in virtual time with no option (as its marble spec does).
 * Pass `now` for any other clock (`() => scheduler.now()` for a scheduler of your own). A budget keeps to one clock:
 * a reading earlier than the latest one counts as the latest (a wall clock set back stands still).
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
 *   r = retry "connection reset"
 *   # = error: RetryBudgetExhaustedError (retry budget exhausted: gave up after 2 attempt(s): connection reset)
 * ```
 *
 * Every case of `marbles/retryBudget.marbles.ts`, with pictures: `docs/operators/retryBudget.md`.
 *
 * State, as in Finagle: the first attempts and the retries of each tenth of the window (20 numbers; the
 * memory does not grow with the load), the refusals so far, and the latest time read. There are no timers: the
 * window moves when the budget is used, from the clock. Where this differs from Finagle: `ttlMs` may be any length
 * (a marble spec uses a few frames), the floor may be a fraction, and the balance is kept in floating point with a
 * tolerance instead of integer thousandths.
 *
 * ## Example
 * ```ts
 * import { defer } from 'rxjs';
 * import { backoff, cleanTurn, requireFinish, retryAsEvents, retryBudget } from 'cleanturn';
 *
 * // Made once for the whole service: retries at most 20% of the turns started in the last 10 s, plus 10 per second.
 * const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0.2, minRetriesPerSec: 10 });
 *
 * // Every turn takes the same budget; a refused retry fails the turn at once with RetryBudgetExhaustedError.
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
 * @see {@link retryAsEvents}, which deposits and withdraws; {@link RetryBudgetExhaustedError}, its refusal.
 * @param options The window, the share of first attempts, the floor and the clock.
 * @returns A budget to pass to every turn that shares it.
 * @throws RangeError when an option is not a finite number in its range, or `now` is not a function.
 */
export function retryBudget(options: RetryBudgetOptions = {}): RetryBudget {
  const { ttlMs = 10_000, percentCanRetry = 0.2, minRetriesPerSec = 10 } = options;
  check('ttlMs', ttlMs, 'a finite number > 0', (n) => n > 0);
  check('percentCanRetry', percentCanRetry, 'a finite number >= 0', (n) => n >= 0);
  check('minRetriesPerSec', minRetriesPerSec, 'a finite number >= 0', (n) => n >= 0);
  if (options.now !== undefined && typeof options.now !== 'function')
    throw new RangeError('retryBudget: now must be a function that returns milliseconds');
  const now = options.now ?? (() => asyncScheduler.now());

  // The length of one slice of the window, in milliseconds.
  const width = ttlMs / SLICES;
  // The floor's retries per window, there whatever the first attempts.
  const reserve = (minRetriesPerSec * ttlMs) / 1000;
  // First attempts per slice, in a ring indexed by the absolute slice number modulo SLICES.
  const deposits = new Array<number>(SLICES).fill(0);
  // Retries allowed per slice, in the same ring.
  const withdrawals = new Array<number>(SLICES).fill(0);
  // The absolute number of the newest slice in the ring (the window ends with it).
  let newest = Number.NEGATIVE_INFINITY;
  // The latest time read: a clock that goes back stands still at it.
  let latest = Number.NEGATIVE_INFINITY;
  // Retries refused since the budget was made.
  let refusals = 0;

  /** Moves the window to the clock's time and returns the ring index of the current slice. */
  const advance = (): number => {
    const time = now();
    if (typeof time !== 'number' || !Number.isFinite(time))
      throw new RangeError(`retryBudget: the clock returned ${String(time)}, not a finite number`);
    if (time > latest) latest = time;
    const current = Math.floor(latest / width);
    // Clears the slices that have left the window since the last use: at most all of them, however long ago.
    for (let slice = Math.max(newest + 1, current - SLICES + 1); slice <= current; slice++) {
      const i = ring(slice);
      deposits[i] = 0;
      withdrawals[i] = 0;
    }
    if (current > newest) newest = current;
    return ring(current);
  };

  /** The window's totals, and how many retries they allow (fractional). */
  const totals = () => {
    let d = 0;
    let w = 0;
    for (let i = 0; i < SLICES; i++) {
      d += deposits[i] as number;
      w += withdrawals[i] as number;
    }
    return { deposits: d, withdrawals: w, balance: reserve + percentCanRetry * d - w };
  };

  return {
    deposit() {
      const i = advance();
      deposits[i] = (deposits[i] as number) + 1;
    },
    tryWithdraw() {
      const i = advance();
      if (totals().balance + EPSILON < 1) {
        refusals++;
        return false;
      }
      withdrawals[i] = (withdrawals[i] as number) + 1;
      return true;
    },
    state() {
      advance();
      const { deposits: d, withdrawals: w, balance } = totals();
      return { deposits: d, withdrawals: w, available: Math.max(0, Math.floor(balance + EPSILON)), refusals };
    },
  };
}

/** The ring index of an absolute slice number (negative too, for a clock before the epoch). */
function ring(slice: number): number {
  return ((slice % SLICES) + SLICES) % SLICES;
}

function check(name: string, value: unknown, what: string, inRange: (n: number) => boolean): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || !inRange(value))
    throw new RangeError(`retryBudget: ${name} must be ${what}, not ${String(value)}`);
}
