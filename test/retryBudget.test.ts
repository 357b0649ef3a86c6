// retryBudget: Finagle's retry budget (a share of first attempts over a sliding window, plus a reserve per second),
// driven by a clock the test holds. Several cases are ports of Finagle's RetryBudgetTest.
import { type RetryBudget, retryBudget, UsageError } from 'cleanturn';
import { timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';

/** A clock the test sets by hand. */
function manualClock(start = 0) {
  let time = start;
  return {
    now: () => time,
    set: (t: number) => {
      time = t;
    },
  };
}

/** Withdraws until the budget refuses (at most `limit` times) and returns how many withdrawals it allowed. */
function drain(budget: RetryBudget, limit = 100_000): number {
  let allowed = 0;
  while (allowed < limit && budget.tryWithdraw()) allowed++;
  return allowed;
}

/**
 * Finagle's `testBudget`: with the clock frozen, `requests` times a deposit and then a withdrawal; returns how many
 * withdrawals were allowed.
 */
function depositThenWithdraw(options: Parameters<typeof retryBudget>[0], requests = 10_000): number {
  const budget = retryBudget({ ...options, now: () => 0 });
  let retried = 0;
  for (let i = 0; i < requests; i++) {
    budget.deposit();
    if (budget.tryWithdraw()) retried++;
    else expect(budget.state().available).toBe(0);
  }
  return retried;
}

describe('retryBudget: the share of first attempts', () => {
  // biome-ignore format: a table
  const percentages = [0.1, 0.5, 0.25, 0.75, 0.99, 0.999, 0.9999, 0.01, 0.001, 0.0001, 0.29, 0.57, 0.07];
  for (const percentCanRetry of percentages) {
    it(`percentCanRetry ${percentCanRetry} allows ${percentCanRetry} × 10,000 retries for 10,000 first attempts`, () => {
      const retried = depositThenWithdraw({ ttlMs: 60_000, minRetriesPerSec: 0, percentCanRetry });
      // Exact, not ± 1: 0.29 × 100 is 28.999… in binary floating point, and must still allow the 29th retry.
      expect(retried).toBe(Math.round(10_000 * percentCanRetry));
    });
  }

  it('a percentage above 1 allows several retries per first attempt', () => {
    const budget = retryBudget({ ttlMs: 60_000, minRetriesPerSec: 0, percentCanRetry: 2, now: () => 0 });
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 10_000; i++) budget.deposit();
    expect(budget.state().available).toBe(20_000);
    expect(drain(budget)).toBe(20_000);
  });

  it('a first attempt alone does not buy a retry below one whole retry', () => {
    const budget = retryBudget({ percentCanRetry: 0.2, minRetriesPerSec: 0, now: () => 0 });
    for (let i = 0; i < 4; i++) budget.deposit();
    expect(budget.state().available).toBe(0);
    expect(budget.tryWithdraw()).toBe(false);
    budget.deposit();
    expect(budget.state().available).toBe(1);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('percentCanRetry 0 and minRetriesPerSec 0 never allow a retry', () => {
    const budget = retryBudget({ percentCanRetry: 0, minRetriesPerSec: 0, now: () => 0 });
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 1000; i++) budget.deposit();
    expect(budget.tryWithdraw()).toBe(false);
    expect(budget.state()).toEqual({ deposits: 1000, withdrawals: 0, available: 0, refusals: 2 });
  });
});

describe('retryBudget: the floor (minRetriesPerSec)', () => {
  it('is a reserve of minRetriesPerSec × the ttl in seconds, there from the start', () => {
    // Finagle: ttl 1 s and 10 per second; ttl 2 s and 5 per second.
    expect(depositThenWithdraw({ ttlMs: 1000, minRetriesPerSec: 10, percentCanRetry: 0 })).toBe(10);
    expect(depositThenWithdraw({ ttlMs: 2000, minRetriesPerSec: 5, percentCanRetry: 0 })).toBe(10);
    expect(retryBudget({ ttlMs: 10_000, minRetriesPerSec: 10, now: () => 0 }).state().available).toBe(100);
  });

  it('adds to the share of first attempts', () => {
    expect(depositThenWithdraw({ ttlMs: 1000, minRetriesPerSec: 10, percentCanRetry: 0.1 })).toBe(1010);
    expect(depositThenWithdraw({ ttlMs: 2000, minRetriesPerSec: 5, percentCanRetry: 0.5 })).toBe(5010);
  });

  it('may be fractional: 0.5 per second over 10 s is 5 retries', () => {
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 0.5, percentCanRetry: 0, now: () => 0 });
    expect(drain(budget)).toBe(5);
  });

  it('comes back as the retries that used it leave the window: minRetriesPerSec per second over a long run', () => {
    const clock = manualClock();
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 1, percentCanRetry: 0, now: clock.now });
    let allowed = 0;
    // One try per 100 ms for 60 s: the reserve of 10 is spent at once, and spent again each time it has left the
    // window, 10 s later: 60 retries in 60 s.
    for (let t = 0; t < 60_000; t += 100) {
      clock.set(t);
      if (budget.tryWithdraw()) allowed++;
    }
    expect(allowed).toBe(60);
  });
});

describe('retryBudget: the sliding window', () => {
  it('a retry counts against the budget for the ttl, then is forgotten', () => {
    const clock = manualClock();
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 0.1, percentCanRetry: 0, now: clock.now });
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
    clock.set(9_999);
    expect(budget.tryWithdraw()).toBe(false);
    clock.set(10_000);
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('first attempts are forgotten after the ttl too', () => {
    const clock = manualClock();
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 0, percentCanRetry: 1, now: clock.now });
    budget.deposit();
    clock.set(5_000);
    budget.deposit();
    expect(budget.state()).toMatchObject({ deposits: 2, available: 2 });
    clock.set(10_000);
    expect(budget.state()).toMatchObject({ deposits: 1, available: 1 });
    clock.set(15_000);
    expect(budget.state()).toMatchObject({ deposits: 0, available: 0 });
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('counts in tenths of the ttl: an entry is kept for at least 9/10 of the ttl and at most the ttl', () => {
    const clock = manualClock();
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 0, percentCanRetry: 1, now: clock.now });
    clock.set(999); // the end of the first tenth
    budget.deposit();
    clock.set(9_999);
    expect(budget.state().deposits).toBe(1); // 9,000 ms later
    clock.set(10_000);
    expect(budget.state().deposits).toBe(0); // 9,001 ms later, at the start of the eleventh tenth
  });

  it('a retry allowed against the reserve and a later first attempt leave the window separately', () => {
    const clock = manualClock();
    const budget = retryBudget({ ttlMs: 1_000, minRetriesPerSec: 1, percentCanRetry: 1, now: clock.now });
    expect(budget.tryWithdraw()).toBe(true); // the reserve: 1 × 1 s
    clock.set(500);
    budget.deposit();
    expect(budget.state()).toEqual({ deposits: 1, withdrawals: 1, available: 1, refusals: 0 });
    clock.set(1_000); // the retry has left the window, the first attempt has not
    expect(budget.state()).toEqual({ deposits: 1, withdrawals: 0, available: 2, refusals: 0 });
    clock.set(1_500);
    expect(budget.state()).toEqual({ deposits: 0, withdrawals: 0, available: 1, refusals: 0 });
  });

  it('forgets everything after a long silence, however long, in constant work', () => {
    const clock = manualClock();
    const budget = retryBudget({ ttlMs: 10, minRetriesPerSec: 0, percentCanRetry: 1, now: clock.now });
    for (let i = 0; i < 50; i++) budget.deposit();
    clock.set(1e15);
    expect(budget.state()).toEqual({ deposits: 0, withdrawals: 0, available: 0, refusals: 0 });
    budget.deposit();
    expect(budget.tryWithdraw()).toBe(true);
  });

  it('works with sub-second windows and fractional times', () => {
    const clock = manualClock(0.25);
    const budget = retryBudget({ ttlMs: 10, minRetriesPerSec: 100, percentCanRetry: 0, now: clock.now });
    expect(budget.state().available).toBe(1); // 100 per second × 10 ms
    expect(budget.tryWithdraw()).toBe(true);
    clock.set(9.99);
    expect(budget.tryWithdraw()).toBe(false);
    clock.set(10); // the start of the eleventh 1-ms tenth: 9.75 ms later
    expect(budget.tryWithdraw()).toBe(true);
  });

  it('a clock that goes back a little (jitter) stands still until it catches up', () => {
    const clock = manualClock(50_000);
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 0.1, percentCanRetry: 0, now: clock.now });
    expect(budget.tryWithdraw()).toBe(true);
    clock.set(45_000); // less than a window back: the latest reading stands
    expect(budget.tryWithdraw()).toBe(false);
    expect(budget.state().withdrawals).toBe(1);
    clock.set(59_999);
    expect(budget.tryWithdraw()).toBe(false);
    clock.set(60_000);
    expect(budget.tryWithdraw()).toBe(true);
  });

  it('keeps bounded memory: a million first attempts are ten numbers, not a million', () => {
    const clock = manualClock();
    const budget = retryBudget({ ttlMs: 1_000, minRetriesPerSec: 0, percentCanRetry: 0.5, now: clock.now });
    for (let i = 0; i < 1_000_000; i++) {
      clock.set(i / 100); // 10 s in all
      budget.deposit();
    }
    // What the window holds: the last second's first attempts, in tenths of a second.
    expect(budget.state().deposits).toBeGreaterThanOrEqual(90_000);
    expect(budget.state().deposits).toBeLessThanOrEqual(100_000);
  });
});

describe('retryBudget: state()', () => {
  it('reports first attempts and retries in the window, what is available, and refusals since it was made', () => {
    const clock = manualClock();
    const budget = retryBudget({
      ttlMs: 10_000,
      minRetriesPerSec: 0.2,
      percentCanRetry: 0.5,
      now: clock.now,
    });
    expect(budget.state()).toEqual({ deposits: 0, withdrawals: 0, available: 2, refusals: 0 });
    for (let i = 0; i < 4; i++) budget.deposit();
    expect(budget.state()).toEqual({ deposits: 4, withdrawals: 0, available: 4, refusals: 0 });
    expect(drain(budget)).toBe(4);
    expect(budget.tryWithdraw()).toBe(false);
    expect(budget.state()).toEqual({ deposits: 4, withdrawals: 4, available: 0, refusals: 2 });
    clock.set(10_000);
    // The window has slid: the counts are gone, the refusals are a running total.
    expect(budget.state()).toEqual({ deposits: 0, withdrawals: 0, available: 2, refusals: 2 });
  });

  it('returns a snapshot: changing it changes nothing', () => {
    const budget = retryBudget({ now: () => 0 });
    const state = budget.state();
    state.available = 0;
    state.refusals = 99;
    expect(budget.state()).toEqual({ deposits: 0, withdrawals: 0, available: 100, refusals: 0 });
  });
});

describe('retryBudget: options', () => {
  it('defaults to a 10 s window, 20% of first attempts and 10 retries per second', () => {
    const budget = retryBudget({ now: () => 0 });
    expect(budget.state().available).toBe(100);
    for (let i = 0; i < 100; i++) budget.deposit();
    expect(budget.state().available).toBe(120);
  });

  // biome-ignore format: a table
  const bad: [string, Parameters<typeof retryBudget>[0]][] = [
    ['ttlMs 0', { ttlMs: 0 }],
    ['a negative ttlMs', { ttlMs: -1 }],
    ['a ttlMs below 1 ms', { ttlMs: 0.5 }],
    ['ttlMs NaN', { ttlMs: Number.NaN }],
    ['an infinite ttlMs', { ttlMs: Number.POSITIVE_INFINITY }],
    ['a negative percentCanRetry', { percentCanRetry: -0.1 }],
    ['percentCanRetry NaN', { percentCanRetry: Number.NaN }],
    ['an infinite percentCanRetry', { percentCanRetry: Number.POSITIVE_INFINITY }],
    ['a negative minRetriesPerSec', { minRetriesPerSec: -1 }],
    ['minRetriesPerSec NaN', { minRetriesPerSec: Number.NaN }],
    ['an infinite minRetriesPerSec', { minRetriesPerSec: Number.POSITIVE_INFINITY }],
    ['a ttlMs that is a string', { ttlMs: '10000' as unknown as number }],
    ['a percentCanRetry that is null', { percentCanRetry: null as unknown as number }],
  ];
  for (const [what, options] of bad) {
    it(`refuses ${what} with a UsageError that names the option`, () => {
      const name = Object.keys(options ?? {})[0] as string;
      expect(() => retryBudget(options)).toThrow(UsageError);
      expect(() => retryBudget(options)).toThrow(new RegExp(`^retryBudget: ${name} must be `));
    });
  }

  it('refuses a now that is not a function with a UsageError', () => {
    expect(() => retryBudget({ now: 5 as unknown as () => number })).toThrow(UsageError);
  });

  it('accepts the limits: percentCanRetry 0, minRetriesPerSec 0, a 1 ms ttl', () => {
    expect(() => retryBudget({ percentCanRetry: 0, minRetriesPerSec: 0, ttlMs: 1 })).not.toThrow();
  });

  it('a clock that returns something other than a finite number is an error of the call, not a silent budget', () => {
    const budget = retryBudget({ now: () => Number.NaN });
    expect(() => budget.deposit()).toThrow(UsageError);
    expect(() => budget.tryWithdraw()).toThrow(UsageError);
    expect(() => budget.state()).toThrow(UsageError);
  });
});

describe('retryBudget: the clock inside TestScheduler.run', () => {
  it("is the virtual time when the budget is given the scheduler's clock", () => {
    const results: [number, boolean][] = [];
    const scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    scheduler.run(({ flush }) => {
      const budget = retryBudget({
        ttlMs: 10,
        minRetriesPerSec: 100,
        percentCanRetry: 0,
        now: () => scheduler.now(),
      });
      for (const at of [0, 9, 10]) {
        timer(at).subscribe(() => results.push([at, budget.tryWithdraw()]));
      }
      flush();
    });
    // Virtual time: the run took no real time, and the window slid at frame 10.
    expect(results).toEqual([
      [0, true],
      [9, false],
      [10, true],
    ]);
  });
});
