// retryBudget and clocks that misbehave: a tiny window or a clock far in the future must not freeze the event loop,
// a clock that jumps ahead and back must not freeze the budget, and the default clock is monotonic. A budget that
// would loop for ever runs in a child process with a timeout, so that a hang fails the test instead of the suite.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { retryBudget, UsageError } from 'cleanturn';
import { afterEach, describe, expect, it, vi } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Runs `body` (an async function body with `retryBudget` in scope) in a child Node process and returns what it
 * returned, as JSON; `{ hung: true }` when the process did not end within 20 s (it is killed).
 */
function inChild(body: string): unknown {
  const script = [
    `const { retryBudget } = await import(${JSON.stringify(`${root}src/index.ts`)});`,
    `const result = await (async () => { ${body} })();`,
    'process.stdout.write(JSON.stringify(result));',
  ].join('\n');
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    timeout: 20_000,
    killSignal: 'SIGKILL',
  });
  if (run.error !== undefined && (run.error as NodeJS.ErrnoException).code === 'ETIMEDOUT')
    return { hung: true };
  if (run.status !== 0) throw new Error(`the child failed (${run.status ?? run.signal}): ${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe('retryBudget: no loop whose length depends on the clock', () => {
  it('retryBudget({ ttlMs: 1e-3 }) is refused when made, not frozen on its first deposit', () => {
    const result = inChild(`
      try {
        retryBudget({ ttlMs: 1e-3 }).deposit();
        return { made: true };
      } catch (error) {
        return { error: error.name, option: error.option };
      }
    `);
    expect(result).toEqual({ error: 'UsageError', option: 'ttlMs' });
  });

  it('a clock far in the future (1e300) costs a few steps, not a frozen event loop', () => {
    const result = inChild(`
      const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 1, minRetriesPerSec: 0, now: () => 1e300 });
      budget.deposit();
      return { withdrawn: budget.tryWithdraw(), state: budget.state() };
    `);
    expect(result).toEqual({
      withdrawn: true,
      state: { deposits: 1, withdrawals: 1, available: 0, refusals: 0 },
    });
  });

  it('a clock that jumps to 1e300 and back keeps sliding with the time that passes after it', () => {
    const result = inChild(`
      let time = 0;
      const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0, minRetriesPerSec: 0.1, now: () => time });
      const at = (t) => { time = t; return budget.tryWithdraw(); };
      return [at(0), at(0), at(1e300), at(1e300), at(0), at(9_999), at(10_000), at(10_000)];
    `);
    // One retry per 10 s window: the jump ahead empties the window, the jump back counts as no time at all, and the
    // 10 s after it count as 10 s.
    expect(result).toEqual([true, false, true, false, false, false, true, false]);
  });

  it('a clock that jumps by more than 2^53 slices between two uses costs the same few steps', () => {
    const result = inChild(`
      let time = 0;
      const budget = retryBudget({ ttlMs: 1, percentCanRetry: 1, minRetriesPerSec: 0, now: () => time });
      const seen = [];
      for (const t of [0, 2 ** 60, 2 ** 60 + 2 ** 9, 2 ** 80, Number.MAX_VALUE]) {
        time = t;
        budget.deposit();
        seen.push(budget.state().deposits);
      }
      return seen;
    `);
    // Each jump is far longer than the window: only the deposit just made is in it.
    expect(result).toEqual([1, 1, 1, 1, 1]);
  });
});

describe('retryBudget: a clock that jumps', () => {
  it('a clock set a day ahead and back does not freeze the budget for a day', () => {
    let time = 0;
    const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0, minRetriesPerSec: 0.1, now: () => time });
    expect(budget.tryWithdraw()).toBe(true);
    time = 86_400_000; // an NTP step a day ahead: the window is empty
    expect(budget.tryWithdraw()).toBe(true);
    time = 1; // and back: no time passes, the retry just taken is still in the window
    expect(budget.tryWithdraw()).toBe(false);
    time = 10_001; // 10 s later, the window has slid (it did not wait for the clock to reach a day again)
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.state()).toMatchObject({ withdrawals: 1, refusals: 1 });
  });

  it('a clock that goes back counts as standing still, then slides with the time after it', () => {
    let time = 50_000;
    const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0, minRetriesPerSec: 0.1, now: () => time });
    expect(budget.tryWithdraw()).toBe(true);
    time = 0;
    expect(budget.tryWithdraw()).toBe(false);
    time = 9_999;
    expect(budget.tryWithdraw()).toBe(false);
    time = 10_000;
    expect(budget.tryWithdraw()).toBe(true);
  });

  it('a clock that goes back and forth around the same time neither loses nor invents time', () => {
    let time = 1_000;
    const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0, minRetriesPerSec: 0.1, now: () => time });
    expect(budget.tryWithdraw()).toBe(true);
    // 9 s of readings that step back 1 ms after every 2 ms forward: 3 s of it count (the steps forward after each
    // step back); the retry stays in the window.
    for (let t = 1_000; t < 10_000; t += 2) {
      time = t;
      budget.state();
      time = t - 1;
      budget.state();
    }
    expect(budget.tryWithdraw()).toBe(false);
  });
});

describe('retryBudget: the default clock is monotonic', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('a wall clock set a day ahead changes nothing: the budget reads performance.now()', () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ['Date'] });
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 0.1, percentCanRetry: 0 });
    expect(budget.tryWithdraw()).toBe(true);
    vi.setSystemTime(1_000_000 + 86_400_000);
    expect(budget.tryWithdraw()).toBe(false);
    vi.setSystemTime(1_000_000);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('slides with performance.now()', () => {
    let time = 5_000;
    vi.spyOn(performance, 'now').mockImplementation(() => time);
    const budget = retryBudget({ ttlMs: 10_000, minRetriesPerSec: 0.1, percentCanRetry: 0 });
    expect(budget.tryWithdraw()).toBe(true);
    time = 14_999;
    expect(budget.tryWithdraw()).toBe(false);
    time = 15_000;
    expect(budget.tryWithdraw()).toBe(true);
  });
});

describe('retryBudget: options out of their bounds are a UsageError', () => {
  // biome-ignore format: a table
  const bad: [string, Parameters<typeof retryBudget>[0], string][] = [
    ['a ttlMs below 1 ms (1e-3, which once froze the event loop)', { ttlMs: 1e-3 }, 'ttlMs'],
    ['a ttlMs above a day',                                        { ttlMs: 86_400_001 }, 'ttlMs'],
    ['a percentCanRetry above 1000',                               { percentCanRetry: 1000.5 }, 'percentCanRetry'],
    ['a minRetriesPerSec above 1,000,000',                         { minRetriesPerSec: 1e7 }, 'minRetriesPerSec'],
    ['a now that is not a function',                               { now: 5 as unknown as () => number }, 'now'],
  ];
  for (const [what, options, option] of bad) {
    it(`refuses ${what}`, () => {
      let thrown: unknown;
      try {
        retryBudget(options);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(UsageError);
      expect(thrown).toMatchObject({ operator: 'retryBudget', option, retryable: false });
      expect((thrown as Error).message).toMatch(new RegExp(`^retryBudget: ${option} must be `));
    });
  }

  it('accepts the bounds themselves', () => {
    for (const options of [
      { ttlMs: 1 },
      { ttlMs: 86_400_000 },
      { percentCanRetry: 0 },
      { percentCanRetry: 1000 },
      { minRetriesPerSec: 0 },
      { minRetriesPerSec: 1e6 },
    ]) {
      expect(() => retryBudget({ ...options, now: () => 0 }).state()).not.toThrow();
    }
  });

  it('a clock reading that is not a finite number is a UsageError of the call that read it', () => {
    const budget = retryBudget({ now: () => Number.POSITIVE_INFINITY });
    expect(() => budget.deposit()).toThrow(UsageError);
    expect(() => budget.deposit()).toThrow(/^retryBudget: now must return a finite number of milliseconds/);
  });
});
