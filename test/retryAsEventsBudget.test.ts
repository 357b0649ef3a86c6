// retryAsEvents({ budget }): a retry budget shared by many turns. Each subscription deposits once (its first
// attempt); each retry withdraws before it waits; a refusal ends the turn at once with retries-exhausted TurnError (limit budget).
import {
  CleanturnError,
  isRetryable,
  type RetryBudget,
  retryAsEvents,
  retryBudget,
  type TurnError,
  turnPipeline,
} from 'cleanturn';
import { finish, reset, retrying, text } from 'cleanturn/testing';
import { asyncScheduler, defer, of, tap, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it, vi } from 'vitest';
import { retriesExhaustedError } from '../src/errors.js';
import { attemptsOf } from './support/attemptsOf.js';
import { expectTurnError, turnErrorWith } from './support/errors.js';
import { withoutFacts } from './support/withoutFacts.js';

// The budget decides whether a retry comes, not what it says: retry events are compared without their facts.
const newScheduler = () =>
  new TestScheduler((actual, expected) => expect(withoutFacts(actual)).toEqual(withoutFacts(expected)));

/** A budget that records what it was asked and answers withdrawals from a list (the last answer repeats). */
function scriptedBudget(...answers: boolean[]): RetryBudget & { calls: string[] } {
  const calls: string[] = [];
  let withdrawals = 0;
  return {
    calls,
    deposit: () => {
      calls.push('deposit');
    },
    tryWithdraw: () => {
      const answer = answers[Math.min(withdrawals++, answers.length - 1)] ?? false;
      calls.push(answer ? 'withdraw' : 'refused');
      return answer;
    },
    state: () => ({ deposits: 0, withdrawals: 0, available: 0, refusals: 0 }),
  };
}

/**
 * One retry per 10 frames, whatever the first attempts (a floor of 100 per second over 10 ms), in virtual time:
 * inside `TestScheduler.run`, `asyncScheduler.now()` is the run's clock (the budget's default is `performance.now()`).
 */
const onePerTenFrames = () =>
  retryBudget({ ttlMs: 10, percentCanRetry: 0, minRetriesPerSec: 100, now: () => asyncScheduler.now() });

const e1 = new Error('connection reset');
const e2 = new Error('stalled');

// biome-ignore format: an aligned value table
const v = {
  a: text('Refunding the dam'),
  b: text('Refund'),
  c: text('Refund started.'),
  f: finish(),
  r: retrying('connection reset', e1),
  s: retrying('stalled', e2),
};

describe('retryAsEvents({ budget }): deposits and withdrawals', () => {
  it('deposits once per subscription, before its first attempt, and withdraws before each retry', () => {
    const budget = scriptedBudget(true);
    newScheduler().run(({ cold, expectObservable }) => {
      const result = attemptsOf(cold('-#', v, e1), cold('-#', v, e2), cold('-f|', v)).pipe(
        tap({ subscribe: () => budget.calls.push('attempt') }),
        retryAsEvents({ count: 3, budget }),
      );
      expectObservable(result).toBe('-rsf|', v);
    });
    expect(budget.calls).toEqual(['deposit', 'attempt', 'withdraw', 'attempt', 'withdraw', 'attempt']);
  });

  it('deposits again for each new subscription of the same observable (each is a turn)', () => {
    const budget = scriptedBudget(true);
    const turn = of(v.a, v.f).pipe(retryAsEvents({ count: 3, budget }));
    turn.subscribe();
    turn.subscribe();
    expect(budget.calls).toEqual(['deposit', 'deposit']);
  });

  it('withdraws nothing for an error that shouldRetry declines or past the cap', () => {
    const fatal = Object.assign(new Error('invalid api key'), { retryable: false });
    const declined = scriptedBudget(true);
    const capped = scriptedBudget(true);
    newScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-#', v, fatal).pipe(retryAsEvents({ count: 3, budget: declined }))).toBe(
        '-#',
        v,
        fatal,
      );
      expectObservable(cold('-#', v, e1).pipe(retryAsEvents({ count: 1, budget: capped }))).toBe(
        '-r#',
        v,
        turnErrorWith('retries-exhausted'),
      );
    });
    expect(declined.calls).toEqual(['deposit']);
    expect(capped.calls).toEqual(['deposit', 'withdraw']);
  });

  it('with count 0 deposits (the turn is load) and passes the error through unchanged', () => {
    const budget = scriptedBudget(true);
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a-#', v, e1);
      expectObservable(source.pipe(retryAsEvents({ count: 0, budget }))).toBe('-a-#', v, e1);
      expectSubscriptions(source.subscriptions).toBe('^--!');
    });
    expect(budget.calls).toEqual(['deposit']);
  });

  it('a consumer that leaves before the first error withdraws nothing', () => {
    const budget = scriptedBudget(true);
    newScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-a---#', v, e1).pipe(retryAsEvents({ count: 3, budget })), '--!').toBe('-a', v);
    });
    expect(budget.calls).toEqual(['deposit']);
  });
});

describe('retryAsEvents({ budget }): a refusal', () => {
  it('ends the turn at once with retries-exhausted TurnError (limit budget), which carries the attempt records', () => {
    let caught: unknown;
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold('    -b-#', v, e2);
      const third = cold('  -c-f-|', v);
      const firstSubs = '   ^--!';
      const secondSubs = '  ---^--!';
      const expected = '    -a-rb-#';

      const result = attemptsOf(first, second, third).pipe(
        retryAsEvents({ count: 5, budget: onePerTenFrames() }),
        tap({ error: (error) => (caught = error) }),
      );
      expectObservable(result).toBe(expected, v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
      expectSubscriptions(third.subscriptions).toBe([]);
    });
    const error = caught as TurnError;
    expectTurnError(error, 'retries-exhausted');
    expect(error.limit).toBe('budget');
    expect(error.attempts).toEqual([
      { attempt: 1, reason: 'connection reset', error: e1, emitted: 1 },
      { attempt: 2, reason: 'stalled', error: e2, emitted: 1 },
    ]);
    expect(error.failures).toBe(2);
    expect(error.name).toBe('TurnError');
    expect(error.message).toBe('retry budget exhausted: gave up after 2 attempt(s): stalled');
  });

  it('is a non-retryable CleanturnError, and a retries-exhausted TurnError (no more attempts, for every handler)', () => {
    const error = retriesExhaustedError('budget', [{ attempt: 1, reason: 'stalled', error: e2, emitted: 0 }]);
    expect(error).toBeInstanceOf(CleanturnError);
    expectTurnError(error, 'retries-exhausted');
    expect(error.retryable).toBe(false);
    expect(isRetryable(error)).toBe(false);
    expect(error.cause).toBeUndefined();
    expect(error.stack?.split('\n')[0]).toBe(
      'TurnError: retry budget exhausted: gave up after 1 attempt(s): stalled',
    );
    expect(retriesExhaustedError('budget', [], 0).message).toBe(
      'retry budget exhausted: gave up after 0 attempt(s)',
    );
    expect(
      retriesExhaustedError('budget', [{ attempt: 7, reason: '', error: e1, emitted: 0 }], 7).message,
    ).toBe('retry budget exhausted: gave up after 7 attempt(s)');
  });

  it('never waits for the delay of a refused retry, and never asks for it', () => {
    const delay = vi.fn(() => of(0));
    const budget = scriptedBudget(false);
    newScheduler().run(({ cold, expectObservable }) => {
      const result = cold('-a-#', v, e1).pipe(retryAsEvents({ count: 3, delay: 1000, budget }));
      expectObservable(result).toBe('-a-#', v, turnErrorWith('retries-exhausted'));
      const withFunction = cold('-#', v, e1).pipe(retryAsEvents({ count: 3, delay, budget }));
      expectObservable(withFunction).toBe('-#', v, turnErrorWith('retries-exhausted'));
    });
    expect(delay).not.toHaveBeenCalled();
  });

  it('an allowed retry waits for its delay; the refused one after it does not', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold('        -b-#', v, e2);
      const firstSubs = '   ^--!';
      const secondSubs = '  --------^--!';
      const expected = '    -a-r-----b-#';

      const result = attemptsOf(first, second).pipe(
        retryAsEvents({ count: 3, delay: 5, budget: onePerTenFrames() }),
      );
      expectObservable(result).toBe(expected, v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
    });
  });

  it('is not retried by an outer retryAsEvents', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-#', v, e1);
      const result = source.pipe(
        retryAsEvents({ count: 3, budget: scriptedBudget(false) }),
        retryAsEvents({ count: 3 }),
      );
      expectObservable(result).toBe('-#', v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(source.subscriptions).toBe('^!');
    });
  });

  it('a source that fails synchronously thousands of times stops when the budget does', () => {
    let subscriptions = 0;
    const budget = retryBudget({ ttlMs: 10_000, percentCanRetry: 0, minRetriesPerSec: 10, now: () => 0 });
    let caught: unknown;
    const values: unknown[] = [];
    defer(() => {
      subscriptions++;
      return throwError(() => e1);
    })
      .pipe(retryAsEvents({ count: 5000, budget }))
      .subscribe({ next: (value) => values.push(value), error: (error) => (caught = error) });
    expectTurnError(caught, 'retries-exhausted');
    expect(caught.limit).toBe('budget');
    expect(subscriptions).toBe(101);
    expect(values).toHaveLength(100);
    expect((caught as TurnError).failures).toBe(101);
    expect(budget.state()).toEqual({ deposits: 1, withdrawals: 100, available: 0, refusals: 1 });
  });
});

describe('retryAsEvents({ budget }): one budget, many turns', () => {
  it('the first attempts of all turns pay for the retries of any: 2 turns at 50% buy one retry', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const budget = retryBudget({ ttlMs: 10, percentCanRetry: 0.5, minRetriesPerSec: 0, now: () => 0 });
      const turnA = attemptsOf(cold('-#', v, e1), cold('-a-f|', v)).pipe(retryAsEvents({ count: 3, budget }));
      const turnB = attemptsOf(cold('---#', v, e2), cold('-c-f|', v)).pipe(
        retryAsEvents({ count: 3, budget }),
      );
      // Turn A fails first and takes the retry that both first attempts bought; turn B's is refused.
      expectObservable(turnA).toBe('-ra-f|', v);
      expectObservable(turnB).toBe('---#', v, turnErrorWith('retries-exhausted'));
    });
  });

  it('a refused turn does not stop another turn from retrying once the window has slid', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const budget = onePerTenFrames();
      const turnA = attemptsOf(cold('-#', v, e1), cold('-f|', v)).pipe(retryAsEvents({ count: 3, budget }));
      const turnB = attemptsOf(cold('--#', v, e2), cold('-f|', v)).pipe(retryAsEvents({ count: 3, budget }));
      const turnC = attemptsOf(cold('-----------#', v, e2), cold('-f|', v)).pipe(
        retryAsEvents({ count: 3, budget }),
      );
      // Turn A takes the one retry of the window at frame 1; turn B is refused at frame 2; the retry of A has left
      // the window at frame 11, when turn C fails.
      expectObservable(turnA).toBe('-rf|', v);
      expectObservable(turnB).toBe('--#', v, turnErrorWith('retries-exhausted'));
      expectObservable(turnC).toBe('-----------sf|', v);
    });
  });
});

describe('retryAsEvents({ budget }): a budget that throws', () => {
  it('a deposit that throws errors the turn at once, before its first attempt', () => {
    const broken = new Error('budget store down');
    const budget: RetryBudget = {
      ...scriptedBudget(true),
      deposit: () => {
        throw broken;
      },
    };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a-f-|', v);
      expectObservable(source.pipe(retryAsEvents({ count: 3, budget }))).toBe('#', v, broken);
      expectSubscriptions(source.subscriptions).toBe([]);
    });
  });

  it('a withdrawal that throws errors the turn with what it threw', () => {
    const broken = new Error('budget store down');
    const budget: RetryBudget = {
      ...scriptedBudget(true),
      tryWithdraw: () => {
        throw broken;
      },
    };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a-#', v, e1);
      expectObservable(source.pipe(retryAsEvents({ count: 3, budget }))).toBe('-a-#', v, broken);
      expectSubscriptions(source.subscriptions).toBe('^--!');
    });
  });
});

describe('turnPipeline({ retry: { budget } })', () => {
  it('passes the budget to retryAsEvents', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const source = attemptsOf(cold('-#', v, e1), cold('-#', v, e2), cold('-f|', v));
      const result = source.pipe(
        turnPipeline({ turnId: 'turn-42', retry: { count: 3, budget: onePerTenFrames() } }),
      );
      expectObservable(result).toBe(
        '-x#',
        { x: reset(2, 'connection reset') },
        turnErrorWith('retries-exhausted'),
      );
    });
  });
});
