import {
  backoff,
  CleanturnError,
  isRetryable,
  requireFinish,
  retryAsEvents,
  type TurnError,
  UsageError,
} from 'cleanturn';
import { finish, retrying, text } from 'cleanturn/testing';
import {
  defer,
  EMPTY,
  Observable,
  of,
  retry as rxjsRetry,
  take,
  takeWhile,
  tap,
  throwError,
  timer,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it, vi } from 'vitest';
import { effectKeyError, missingFinishError, retriesExhaustedError } from '../src/errors.js';
import type { RetryAsEventsOptions } from '../src/retryAsEvents.js';
import { attemptsOf } from './support/attemptsOf.js';
import { expectTurnError, turnErrorWith } from './support/errors.js';
import { withoutFacts } from './support/withoutFacts.js';

// The facts a retry event carries (delay, retry count…) have their own tests below; the rest of this file is about
// when events come and how attempts are counted, so it compares retry events without them.
const newScheduler = () =>
  new TestScheduler((actual, expected) => expect(withoutFacts(actual)).toEqual(withoutFacts(expected)));

const e1 = new Error('first failed');
const e2 = new Error('second failed');
const e3 = new Error('third failed');

// biome-ignore format: an aligned value table
const v = {
  a: text('Checking order ORD-7781. '),
  b: text('Refunding the dam'),
  c: text('The book arrived damaged.'),
  f: finish('stop'),
  r: retrying('first failed', e1),
  s: retrying('second failed', e2),
};

describe('retryAsEvents: a retry event before each resubscription', () => {
  it('emits the retry event in the frame of the error and resubscribes at once without a delay', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold('    -b-#', v, e2);
      const third = cold('        -c-f-|', v);
      const firstSubs = '   ^--!';
      const secondSubs = '  ---^--!';
      const thirdSubs = '   ------^----!';
      const expected = '    -a-rb-sc-f-|';

      expectObservable(attemptsOf(first, second, third).pipe(retryAsEvents({ count: 2 }))).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
      expectSubscriptions(third.subscriptions).toBe(thirdSubs);
    });
  });

  it('with a numeric delay, emits the retry when the attempt fails, then waits in virtual time', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold('         -b-f-|', v);
      const firstSubs = '   ^--!';
      const secondSubs = '  --------^----!';
      const expected = '    -a-r-----b-f-|';

      expectObservable(attemptsOf(first, second).pipe(retryAsEvents({ count: 1, delay: 5 }))).toBe(
        expected,
        v,
      );
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
    });
  });

  it('with a delay function, passes the error and the 1-based retry number and waits for its first value', () => {
    const delay = vi.fn((_error: unknown, retryCount: number) => timer(retryCount * 3));
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -#', v, e1);
      const second = cold('     -#', v, e2);
      const third = cold('                 -a-f-|', v);
      const firstSubs = '   ^!';
      const secondSubs = '  ----^!';
      const thirdSubs = '   -----------^----!';
      const expected = '    -r---s------a-f-|';

      expectObservable(attemptsOf(first, second, third).pipe(retryAsEvents({ count: 2, delay }))).toBe(
        expected,
        v,
      );
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
      expectSubscriptions(third.subscriptions).toBe(thirdSubs);
    });
    expect(delay.mock.calls).toEqual([
      [e1, 1],
      [e2, 2],
    ]);
  });

  it('with backoff(), grows the delay per retry in virtual time', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -#', v, e1);
      const second = cold('     -#', v, e2);
      const third = cold('                 -a-f-|', v);
      const firstSubs = '   ^!';
      const secondSubs = '  ----^!';
      const thirdSubs = '   -----------^----!';
      const expected = '    -r---s------a-f-|';

      const delay = backoff({ initialDelay: 3, factor: 2, jitter: 'none' });
      expectObservable(attemptsOf(first, second, third).pipe(retryAsEvents({ count: 2, delay }))).toBe(
        expected,
        v,
      );
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
      expectSubscriptions(third.subscriptions).toBe(thirdSubs);
    });
  });

  it('retries only once when the delay notifier emits several values', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('     -a-#', v, e1);
      const second = cold('        -b-f-|', v);
      const notifier = cold('     -xy|');
      const firstSubs = '      ^--!';
      const notifierSubs = '   ---^!';
      const secondSubs = '     ----^----!';
      const expected = '       -a-r-b-f-|';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: () => notifier }));
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(notifier.subscriptions).toBe(notifierSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
    });
  });

  it('accepts a promise as the delay notifier', async () => {
    const values: unknown[] = [];
    let subscriptions = 0;
    const source = defer(() => (++subscriptions === 1 ? throwError(() => e1) : of(v.a, v.f)));
    await new Promise<void>((resolve, reject) => {
      source.pipe(retryAsEvents({ count: 1, delay: () => Promise.resolve('go') })).subscribe({
        next: (value) => values.push(value),
        error: reject,
        complete: resolve,
      });
    });
    expect(values).toMatchObject([v.r, v.a, v.f]);
    expect(subscriptions).toBe(2);
  });
});

describe('retryAsEvents: the retry event comes before the wait, whatever the wait then does', () => {
  it('emits the retry, then completes when the delay notifier completes without a value', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('     -a-#', v, e1);
      const second = cold('    -b-f-|', v);
      const notifier = cold('     ---|');
      const firstSubs = '      ^--!';
      const notifierSubs = '   ---^--!';
      const expected = '       -a-r--|';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: () => notifier }));
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(notifier.subscriptions).toBe(notifierSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('emits the retry and completes at once when the delay notifier is EMPTY', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold(' -b-f-|', v);
      const firstSubs = '   ^--!';
      const expected = '    -a-(r|)';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: () => EMPTY }));
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('emits the retry, then errors with the notifier error when the delay notifier errors', () => {
    const notifierError = new Error('circuit open');
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('     -a-#', v, e1);
      const second = cold('    -b-f-|', v);
      const notifier = cold('     --#', undefined, notifierError);
      const firstSubs = '      ^--!';
      const notifierSubs = '   ---^-!';
      const expected = '       -a-r-#';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: () => notifier }));
      expectObservable(result).toBe(expected, v, notifierError);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(notifier.subscriptions).toBe(notifierSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('unsubscribes the pending delay when the consumer leaves while it waits', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('     -a-#', v, e1);
      const second = cold('    -b-f-|', v);
      const notifier = cold('     -----x');
      const unsub = '          -----!';
      const firstSubs = '      ^--!';
      const notifierSubs = '   ---^-!';
      const expected = '       -a-r--';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: () => notifier }));
      expectObservable(result, unsub).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(notifier.subscriptions).toBe(notifierSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });
});

describe('retryAsEvents: a consumer that leaves on the retry event', () => {
  it('takeWhile(e => e.type !== "retry") causes no new subscription to the source', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold(' -b-f-|', v);
      const firstSubs = '   ^--!';
      const expected = '    -a-|';

      const result = attemptsOf(first, second).pipe(
        retryAsEvents({ count: 3 }),
        takeWhile((e) => e.type !== 'retry'),
      );
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('take(2) sees the retry event and causes no new subscription, also after a delay', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold(' -b-f-|', v);
      const firstSubs = '   ^--!';
      const expected = '    -a-(r|)';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: 2 }), take(2));
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('with a source that errors synchronously, subscribes to it once', () => {
    let subscriptions = 0;
    newScheduler().run(({ expectObservable }) => {
      const source = defer(() => {
        subscriptions++;
        return throwError(() => e1);
      });
      const result = source.pipe(
        retryAsEvents({ count: 3 }),
        takeWhile((e) => e.type !== 'retry'),
      );
      expectObservable(result).toBe('|');
    });
    expect(subscriptions).toBe(1);
  });
});

describe('retryAsEvents: synchronous sources', () => {
  it('retries a source that errors synchronously, in the same frame', () => {
    let subscriptions = 0;
    newScheduler().run(({ expectObservable }) => {
      const source = defer(() => {
        subscriptions++;
        return subscriptions === 1
          ? throwError(() => e1)
          : subscriptions === 2
            ? throwError(() => e2)
            : of(v.a, v.f);
      });
      expectObservable(source.pipe(retryAsEvents({ count: 5 }))).toBe('(rsaf|)', v);
    });
    expect(subscriptions).toBe(3);
  });

  it('retries a source that emits and then errors synchronously', () => {
    let subscriptions = 0;
    newScheduler().run(({ expectObservable }) => {
      const source = defer(() => {
        subscriptions++;
        return subscriptions === 1
          ? new Observable<unknown>((subscriber) => {
              subscriber.next(v.b);
              subscriber.error(e1);
            })
          : of(v.a, v.f);
      });
      expectObservable(source.pipe(retryAsEvents({ count: 1 }))).toBe('(braf|)', v);
    });
    expect(subscriptions).toBe(2);
  });

  it('waits for the delay after a synchronous error', () => {
    let subscriptions = 0;
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const later = cold('     -a|', v);
      const laterSubs = '   --^-!';
      const expected = '    r--a|';
      const source = defer(() => (++subscriptions === 1 ? throwError(() => e1) : later));
      expectObservable(source.pipe(retryAsEvents({ count: 1, delay: 2 }))).toBe(expected, v);
      expectSubscriptions(later.subscriptions).toBe(laterSubs);
    });
    expect(subscriptions).toBe(2);
  });

  it('gives up on a source that always errors synchronously, after count retries', () => {
    let subscriptions = 0;
    let caught: unknown;
    newScheduler().run(({ expectObservable }) => {
      const source = defer(() => {
        subscriptions++;
        return throwError(() => (subscriptions === 1 ? e1 : e2));
      });
      const result = source.pipe(retryAsEvents({ count: 2 }), tap({ error: (error) => (caught = error) }));
      expectObservable(result).toBe('(rs#)', v, turnErrorWith('retries-exhausted'));
    });
    expect(subscriptions).toBe(3);
    expectTurnError(caught, 'retries-exhausted');
    expect((caught as TurnError).attempts?.map((a) => a.error)).toEqual([e1, e2, e2]);
  });
});

describe('retryAsEvents: resetOnSuccess', () => {
  it('without it, the cap counts every retry of the turn', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold('-a-#', v, e1);
      const done = cold('   -f-|', v);
      const failingSubs = ['^--!', '---^--!'];
      const expected = '    -a-ra-#';

      const result = attemptsOf(failing, failing, failing, done).pipe(retryAsEvents({ count: 1 }));
      expectObservable(result).toBe(expected, v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(failing.subscriptions).toBe(failingSubs);
      expectSubscriptions(done.subscriptions).toBe([]);
    });
  });

  it('with it, any value of an attempt resets the count', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold('-a-#', v, e1);
      const done = cold('            -f-|', v);
      const failingSubs = ['^--!', '---^--!', '------^--!'];
      const doneSubs = '    ---------^--!';
      const expected = '    -a-ra-ra-rf-|';

      const result = attemptsOf(failing, failing, failing, done).pipe(
        retryAsEvents({ count: 1, resetOnSuccess: true }),
      );
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(failing.subscriptions).toBe(failingSubs);
      expectSubscriptions(done.subscriptions).toBe(doneSubs);
    });
  });

  it('with it, an attempt that emits nothing does not reset the count', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold('-#', v, e1);
      const done = cold('   -f-|', v);
      const failingSubs = ['^!', '-^!'];
      const expected = '    -r#';

      const result = attemptsOf(failing, failing, done).pipe(
        retryAsEvents({ count: 1, resetOnSuccess: true }),
      );
      expectObservable(result).toBe(expected, v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(failing.subscriptions).toBe(failingSubs);
      expectSubscriptions(done.subscriptions).toBe([]);
    });
  });
});

describe('retryAsEvents: retries-exhausted TurnError', () => {
  it('records every failed attempt: its number, reason, error and how much it had emitted', () => {
    let caught: unknown;
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold('    -#', v, e2);
      const third = cold('      -a-b-#', v, e3);
      const firstSubs = '   ^--!';
      const secondSubs = '  ---^!';
      const thirdSubs = '   ----^----!';
      const expected = '    -a-rsa-b-#';

      const result = attemptsOf(first, second, third).pipe(
        retryAsEvents({ count: 2 }),
        tap({ error: (error) => (caught = error) }),
      );
      expectObservable(result).toBe(expected, v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
      expectSubscriptions(third.subscriptions).toBe(thirdSubs);
    });

    expectTurnError(caught, 'retries-exhausted');
    expect(caught).toBeInstanceOf(CleanturnError);
    const error = caught as TurnError;
    expect(error.attempts).toEqual([
      { attempt: 1, reason: 'first failed', error: e1, emitted: 1 },
      { attempt: 2, reason: 'second failed', error: e2, emitted: 0 },
      { attempt: 3, reason: 'third failed', error: e3, emitted: 2 },
    ]);
    expect(error.retryable).toBe(false);
    expect(isRetryable(error)).toBe(false);
    // The last failure is in the message and in `attempts`; not again as `cause`, which printers show after it.
    expect(error.cause).toBeUndefined();
    const chain: string[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain.push(e.message);
    expect(chain.join(' ← ').split('third failed').length - 1).toBe(1);
    expect(error.name).toBe('TurnError');
    expect(error.message).toBe('gave up after 3 attempt(s): third failed');
  });

  it('is not retried again by an outer retryAsEvents', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -#', undefined, e1);
      const sourceSubs = [' ^!', ' -^!'];
      const result = source.pipe(retryAsEvents({ count: 1 }), retryAsEvents({ count: 5 }));
      expectObservable(result).toBe('-r#', v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });
});

describe('retryAsEvents: which errors are retried', () => {
  it('by default passes an error with retryable: false through unchanged, without retrying', () => {
    const fatal = Object.assign(new Error('invalid api key'), { retryable: false });
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, fatal);
      const second = cold(' -b-f-|', v);
      const firstSubs = '   ^--!';
      const expected = '    -a-#';

      expectObservable(attemptsOf(first, second).pipe(retryAsEvents({ count: 3 }))).toBe(expected, v, fatal);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('by default passes a non-retryable CleanturnError through unchanged', () => {
    const fatal = effectKeyError('issue_refund', new TypeError('cycle'));
    let caught: unknown;
    newScheduler().run(({ cold, expectSubscriptions }) => {
      const first = cold('  -#', undefined, fatal);
      const firstSubs = '   ^!';
      first.pipe(retryAsEvents({ count: 3 })).subscribe({ error: (error) => (caught = error) });
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
    });
    expect(caught).toBe(fatal);
  });

  it('by default retries a retryable CleanturnError, such as a missing finish', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const cutOff = cold(' -a-|', v);
      const whole = cold('     -a-f-|', v);
      const cutOffSubs = '  ^--!';
      const wholeSubs = '   ---^----!';
      const expected = '    -a-ra-f-|';

      const result = attemptsOf(cutOff, whole).pipe(requireFinish(), retryAsEvents({ count: 1 }));
      expectObservable(result).toBe(expected, {
        ...v,
        r: retrying('the stream completed without a finish event', missingFinishError()),
      });
      expectSubscriptions(cutOff.subscriptions).toBe(cutOffSubs);
      expectSubscriptions(whole.subscriptions).toBe(wholeSubs);
    });
  });

  it('passes the error and the 1-based retry number to shouldRetry', () => {
    const shouldRetry = vi.fn((error: unknown, _retryCount: number) => error !== e3);
    newScheduler().run(({ cold, expectObservable }) => {
      const result = attemptsOf(cold('-#', v, e1), cold('-#', v, e2), cold('-#', v, e3)).pipe(
        retryAsEvents({ count: 5, shouldRetry }),
      );
      expectObservable(result).toBe('-rs#', v, e3);
    });
    expect(shouldRetry.mock.calls).toEqual([
      [e1, 1],
      [e2, 2],
      [e3, 3],
    ]);
  });

  it('isRetryable is false only for a value that carries retryable: false', () => {
    // biome-ignore format: a table
    const cases: [unknown, boolean][] = [
      [new Error('socket hang up'), true],
      [Object.assign(new Error('bad request'), { retryable: false }), false],
      [Object.assign(new Error('overloaded'), { retryable: true }), true],
      [{ retryable: false }, false],
      [{ retryable: 'no' }, true],
      [missingFinishError(), true],
      [effectKeyError('issue_refund', undefined), false],
      ['a string', true],
      [null, true],
      [undefined, true],
    ];
    for (const [error, retryable] of cases) expect(isRetryable(error), String(error)).toBe(retryable);
  });
});

describe('retryAsEvents: the reason of the retry event', () => {
  // biome-ignore format: a table
  const cases: [string, unknown, string][] = [
    ['an Error: its message', new Error('connection reset'), 'connection reset'],
    ['an Error without message: its name', new TypeError(''), 'TypeError'],
    ['a string: itself', 'socket hang up', 'socket hang up'],
    ['anything else: String()', 503, '503'],
  ];
  for (const [what, error, reason] of cases) {
    it(`describes ${what}`, () => {
      newScheduler().run(({ cold, expectObservable }) => {
        const result = attemptsOf(cold('-#', undefined, error), cold('-f|', v)).pipe(
          retryAsEvents({ count: 1 }),
        );
        expectObservable(result).toBe('-rf|', { ...v, r: { type: 'retry', reason, error } });
      });
    });
  }

  it('uses the reason option when given', () => {
    const reason = vi.fn((error: unknown) => `upstream: ${(error as Error).message}`);
    newScheduler().run(({ cold, expectObservable }) => {
      const result = attemptsOf(cold('-#', undefined, e1), cold('-f|', v)).pipe(
        retryAsEvents({ count: 1, reason }),
      );
      expectObservable(result).toBe('-rf|', { ...v, r: retrying('upstream: first failed', e1) });
    });
    expect(reason).toHaveBeenCalledWith(e1);
  });
});

describe('backoff', () => {
  /** The virtual time at which the delay observable for this retry number fires. */
  function waitFor(delay: ReturnType<typeof backoff>, retryCount: number): number {
    const scheduler = newScheduler();
    let firedAt = Number.NaN;
    scheduler.run(() => {
      delay(new Error('x'), retryCount).subscribe(() => {
        firedAt = scheduler.now();
      });
    });
    return firedAt;
  }

  it('grows by the factor per retry and stops at maxDelay', () => {
    const delay = backoff({ initialDelay: 100, factor: 2, maxDelay: 1000, jitter: 'none' });
    expect([1, 2, 3, 4, 5, 6].map((n) => waitFor(delay, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('defaults to 500 ms, factor 2, a 30 s cap', () => {
    const delay = backoff({ jitter: 'none' });
    expect([1, 2, 3, 6, 7, 20].map((n) => waitFor(delay, n))).toEqual([500, 1000, 2000, 16000, 30000, 30000]);
  });

  it('treats a retry number below 1 as the first retry', () => {
    const delay = backoff({ initialDelay: 100, jitter: 'none' });
    expect(waitFor(delay, 0)).toBe(100);
  });

  it('full jitter waits random × the capped delay', () => {
    const random = vi.fn(() => 0.25);
    const delay = backoff({ initialDelay: 100, factor: 3, maxDelay: 500, jitter: 'full', random });
    expect([1, 2, 3].map((n) => waitFor(delay, n))).toEqual([25, 75, 125]);
    expect(random).toHaveBeenCalledTimes(3);
  });

  it('full jitter is the default and spans [0, d]', () => {
    expect(waitFor(backoff({ initialDelay: 100, random: () => 0 }), 1)).toBe(0);
    expect(waitFor(backoff({ initialDelay: 100, random: () => 0.999 }), 1)).toBe(100);
  });

  it('equal jitter waits in [d/2, d]', () => {
    const at = (r: number) => waitFor(backoff({ initialDelay: 200, jitter: 'equal', random: () => r }), 2);
    expect([at(0), at(0.5), at(0.999)]).toEqual([200, 300, 400]);
  });

  it('no jitter ignores random', () => {
    const random = vi.fn(() => 0.5);
    expect(waitFor(backoff({ initialDelay: 40, jitter: 'none', random }), 2)).toBe(80);
    expect(random).not.toHaveBeenCalled();
  });

  it('rounds the wait to whole milliseconds', () => {
    expect(waitFor(backoff({ initialDelay: 10, random: () => 0.333 }), 1)).toBe(3);
    expect(waitFor(backoff({ initialDelay: 10, random: () => 0.36 }), 1)).toBe(4);
  });

  it('uses the given scheduler', () => {
    const scheduler = newScheduler();
    let fired = false;
    backoff({ initialDelay: 30, jitter: 'none', scheduler })(null, 1).subscribe(() => {
      fired = true;
    });
    scheduler.flush();
    expect(fired).toBe(true);
    expect(scheduler.now()).toBe(30);
  });

  it('rejects negative delays and a factor below 1', () => {
    expect(() => backoff({ initialDelay: -1 })).toThrow(UsageError);
    expect(() => backoff({ maxDelay: -1 })).toThrow(UsageError);
    expect(() => backoff({ factor: 0.5 })).toThrow(UsageError);
    expect(() => backoff({ initialDelay: Number.NaN })).toThrow(UsageError);
  });

  it('a random that throws errors the retried stream', () => {
    const broken = new Error('no entropy');
    const options: RetryAsEventsOptions = {
      count: 2,
      delay: backoff({
        random: () => {
          throw broken;
        },
      }),
    };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-#', v, e1);
      const sourceSubs = '  ^--!';
      expectObservable(source.pipe(retryAsEvents(options))).toBe('-a-#', v, broken);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });
});

describe('retryAsEvents: a delay notifier that emits synchronously', () => {
  it('retries at once, and a later pending delay is still torn down with the consumer', () => {
    let subscriptions = 0;
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -#', v, e1);
      const pending = cold('  ----------x');
      const unsub = '       -----!';
      const pendingSubs = ' -^---!';
      const expected = '    -(rs)';

      // Attempt 2 fails synchronously, while the synchronous notifier of retry 1 is still emitting.
      const source = defer(() => (++subscriptions === 1 ? first : throwError(() => e2)));
      const delay = (_error: unknown, retryCount: number) => (retryCount === 1 ? of('now') : pending);

      expectObservable(source.pipe(retryAsEvents({ count: 5, delay })), unsub).toBe(expected, v);
      expectSubscriptions(pending.subscriptions).toBe(pendingSubs);
    });
    expect(subscriptions).toBe(2);
  });
});

/** Subscribes to a synchronous observable and returns what it said; a RangeError thrown out of `subscribe` counts. */
function runSync<T>(source: Observable<T>): { values: T[]; error: unknown; completed: boolean } {
  const result = { values: [] as T[], error: undefined as unknown, completed: false };
  try {
    source.subscribe({
      next: (value) => result.values.push(value),
      error: (error: unknown) => {
        result.error = error;
      },
      complete: () => {
        result.completed = true;
      },
    });
  } catch (thrown) {
    result.error = thrown;
  }
  return result;
}

/** A source that fails synchronously (through `make`) on its first `failures` subscriptions, then sends a and f. */
function failingSync(failures: number, make: (error: Error) => Observable<never>) {
  let subscriptions = 0;
  const source$ = defer(() => (++subscriptions <= failures ? make(e1) : of(v.a, v.f)));
  return { source$, subscriptions: () => subscriptions };
}

describe('retryAsEvents: thousands of synchronous failures run in a loop, not a recursion', () => {
  const FAILURES = 5000;

  it('defer(() => throwError(…)) failing 5,000 times with count: 5000 completes with the 5,001st attempt', () => {
    const { source$, subscriptions } = failingSync(FAILURES, (error) => throwError(() => error));
    const result = runSync(source$.pipe(retryAsEvents({ count: FAILURES })));
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
    expect(result.values).toHaveLength(FAILURES + 2);
    expect(result.values.slice(-3)).toMatchObject([v.r, v.a, v.f]);
    expect(subscriptions()).toBe(FAILURES + 1);
  });

  it('new Observable(s => s.error(e)) failing 5,000 times with count: 4999 ends in retries-exhausted TurnError', () => {
    const { source$, subscriptions } = failingSync(
      FAILURES,
      (error) => new Observable<never>((subscriber) => subscriber.error(error)),
    );
    const result = runSync(source$.pipe(retryAsEvents({ count: FAILURES - 1 })));
    expectTurnError(result.error, 'retries-exhausted');
    expect(result.values).toHaveLength(FAILURES - 1);
    expect(subscriptions()).toBe(FAILURES);
  });

  it('a delay function that returns a synchronous notifier (of(0)) loops too', () => {
    const { source$, subscriptions } = failingSync(FAILURES, (error) => throwError(() => error));
    const result = runSync(source$.pipe(retryAsEvents({ count: FAILURES, delay: () => of(0) })));
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
    expect(result.values).toHaveLength(FAILURES + 2);
    expect(subscriptions()).toBe(FAILURES + 1);
  });

  it('a source that emits and then fails synchronously, with resetOnSuccess, 20,000 times', () => {
    const MANY = 20_000;
    let subscriptions = 0;
    const source$ = defer(() =>
      ++subscriptions <= MANY
        ? new Observable<typeof v.b>((subscriber) => {
            subscriber.next(v.b);
            subscriber.error(e1);
          })
        : of(v.a, v.f),
    );
    const result = runSync(source$.pipe(retryAsEvents({ count: 1, resetOnSuccess: true })));
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
    expect(result.values).toHaveLength(2 * MANY + 2);
    expect(subscriptions).toBe(MANY + 1);
  });

  it('a consumer that leaves on the 3,000th retry event stops the loop', () => {
    const { source$, subscriptions } = failingSync(FAILURES, (error) => throwError(() => error));
    const result = runSync(source$.pipe(retryAsEvents({ count: FAILURES }), take(3000)));
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
    expect(subscriptions()).toBe(3000);
  });
});

describe('retryAsEvents: the attempt records stay bounded', () => {
  it('keeps the 32 most recent records over 10,000 retries, with absolute attempt numbers and the total', () => {
    const RETRIES = 10_000;
    let caught: unknown;
    newScheduler().run(({ cold }) => {
      const failing = cold('-#', undefined, e1);
      failing.pipe(retryAsEvents({ count: RETRIES })).subscribe({ error: (error) => (caught = error) });
    });
    expectTurnError(caught, 'retries-exhausted');
    const error = caught as TurnError;
    expect(error.attempts).toHaveLength(32);
    expect(error.attempts?.map((a) => a.attempt)).toEqual(
      Array.from({ length: 32 }, (_, i) => RETRIES + 1 - 31 + i),
    );
    expect(error.attempts?.at(-1)).toEqual({
      attempt: RETRIES + 1,
      reason: 'first failed',
      error: e1,
      emitted: 0,
    });
    expect(error.failures).toBe(RETRIES + 1);
    expect(error.message).toBe(`gave up after ${RETRIES + 1} attempt(s): first failed`);
  });

  it('with resetOnSuccess, drops the records at each reset: 10,000 retries leave the failures since the last one', () => {
    const RETRIES = 10_000;
    let subscriptions = 0;
    let caught: unknown;
    newScheduler().run(({ cold }) => {
      const emitsThenFails = cold('-a-#', v, e1);
      const failsAtOnce = cold('-#', v, e2);
      const source$ = defer(() => (++subscriptions <= RETRIES ? emitsThenFails : failsAtOnce));
      source$
        .pipe(retryAsEvents({ count: 1, resetOnSuccess: true }))
        .subscribe({ error: (error) => (caught = error) });
    });
    expect(subscriptions).toBe(RETRIES + 1);
    expectTurnError(caught, 'retries-exhausted');
    const error = caught as TurnError;
    expect(error.attempts).toEqual([
      { attempt: RETRIES, reason: 'first failed', error: e1, emitted: 1 },
      { attempt: RETRIES + 1, reason: 'second failed', error: e2, emitted: 0 },
    ]);
    expect(error.failures).toBe(RETRIES + 1);
  });

  it('with resetOnSuccess, the exhausted error carries the failures since the last reset', () => {
    let caught: unknown;
    newScheduler().run(({ cold, expectObservable }) => {
      const silent = cold(' -#', v, e1);
      const emits = cold('  -a-#', v, e2);
      const result = attemptsOf(silent, emits, silent).pipe(
        retryAsEvents({ count: 1, resetOnSuccess: true }),
        tap({ error: (error) => (caught = error) }),
      );
      expectObservable(result).toBe('-ra-s#', v, turnErrorWith('retries-exhausted'));
    });
    const error = caught as TurnError;
    expect(error.attempts).toEqual([
      { attempt: 2, reason: 'second failed', error: e2, emitted: 1 },
      { attempt: 3, reason: 'first failed', error: e1, emitted: 0 },
    ]);
    expect(error.failures).toBe(3);
    expect(error.message).toBe('gave up after 3 attempt(s): first failed');
  });
});

describe('retryAsEvents: a number, as RxJS retry(n) takes', () => {
  it('retryAsEvents(1) caps like retryAsEvents({ count: 1 })', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold('-#', v, e1);
      const done = cold('   -f-|', v);
      const failingSubs = ['^!', '-^!'];

      const result = attemptsOf(failing, failing, failing, done).pipe(retryAsEvents(1));
      expectObservable(result).toBe('-r#', v, turnErrorWith('retries-exhausted'));
      expectSubscriptions(failing.subscriptions).toBe(failingSubs);
      expectSubscriptions(done.subscriptions).toBe([]);
    });
  });

  it('retryAsEvents(2) retries twice, then the third attempt completes', () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const result = attemptsOf(cold('-#', v, e1), cold('-#', v, e2), cold('-f|', v)).pipe(retryAsEvents(2));
      expectObservable(result).toBe('-rsf|', v);
    });
  });
});

describe('retryAsEvents: count 0 or below returns the source, as RxJS retry does', () => {
  // biome-ignore format: a table
  const cases: [string, () => ReturnType<typeof retryAsEvents>][] = [
    ['{ count: 0 }', () => retryAsEvents({ count: 0 })],
    ['{ count: -1 }', () => retryAsEvents({ count: -1 })],
    ['0', () => retryAsEvents(0)],
    ['-3', () => retryAsEvents(-3)],
  ];
  for (const [label, operator] of cases) {
    it(`retryAsEvents(${label}) passes the error through unchanged, without a retry event`, () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const failing = cold('-a-#', v, e1);
        const done = cold('   -f-|', v);
        const failingSubs = ' ^--!';
        expectObservable(attemptsOf(failing, done).pipe(operator())).toBe('-a-#', v, e1);
        expectSubscriptions(failing.subscriptions).toBe(failingSubs);
        expectSubscriptions(done.subscriptions).toBe([]);
      });
    });
  }

  it('returns the very source, as RxJS retry({ count: 0 }) does', () => {
    const source = of(v.a, v.f);
    expect(rxjsRetry({ count: 0 })(source)).toBe(source);
    expect(retryAsEvents({ count: 0 })(source)).toBe(source);
  });
});

describe('retryAsEvents: the message of retries-exhausted TurnError', () => {
  it('separates the count from the last reason', () => {
    let caught: unknown;
    newScheduler().run(({ cold }) => {
      const cutOff = cold('-a-|', v);
      cutOff
        .pipe(requireFinish(), retryAsEvents({ count: 1 }))
        .subscribe({ error: (error) => (caught = error) });
    });
    expect((caught as Error).message).toBe(
      'gave up after 2 attempt(s): the stream completed without a finish event',
    );
  });

  it('ends after the count when the reason is empty, without a dangling colon', () => {
    let caught: unknown;
    newScheduler().run(({ cold }) => {
      cold('-#', undefined, e1)
        .pipe(retryAsEvents({ count: 1, reason: () => '' }))
        .subscribe({ error: (error) => (caught = error) });
    });
    expect((caught as Error).message).toBe('gave up after 2 attempt(s)');
  });

  it('counts the given total, not the records kept, and defaults the total to the records', () => {
    const record = { attempt: 40, reason: 'stalled', error: e1, emitted: 0 };
    expect(retriesExhaustedError('cap', [record], 40)).toMatchObject({
      failures: 40,
      message: 'gave up after 40 attempt(s): stalled',
    });
    expect(retriesExhaustedError('cap', [record])).toMatchObject({
      failures: 1,
      message: 'gave up after 1 attempt(s): stalled',
    });
  });
});

describe('retryAsEvents: the facts of a retry event', () => {
  /** The retry events of a source that fails with `errors` in turn (after emitting `emit` first), then finishes. */
  function retriesOf(
    errors: unknown[],
    options: RetryAsEventsOptions,
    emit: (attempt: number) => boolean = () => true,
  ): Record<string, unknown>[] {
    const seen: Record<string, unknown>[] = [];
    new TestScheduler(() => {}).run(({ flush }) => {
      let subscriptions = 0;
      const source = defer(() => {
        const n = ++subscriptions;
        const error = errors[n - 1];
        if (error === undefined) return of(v.a, v.f);
        return new Observable<unknown>((subscriber) => {
          if (emit(n)) subscriber.next(v.b);
          subscriber.error(error);
        });
      });
      source.pipe(retryAsEvents(options)).subscribe({
        next: (event) => {
          if ((event as { type: string }).type === 'retry') seen.push(event as Record<string, unknown>);
        },
        error: () => {},
      });
      flush();
    });
    return seen;
  }

  it('without a delay: delay 0, the failed attempt, whether it had emitted, the count and the cap, the class', () => {
    const retries = retriesOf([e1, new TypeError('fetch failed')], { count: 3 }, (n) => n === 1);
    expect(retries).toEqual([
      {
        type: 'retry',
        reason: 'first failed',
        error: e1,
        delay: 0,
        failedAttempt: 1,
        outputStarted: true,
        retryCount: 1,
        maxRetries: 3,
        errorName: 'Error',
      },
      expect.objectContaining({
        reason: 'fetch failed',
        delay: 0,
        failedAttempt: 2,
        outputStarted: false,
        retryCount: 2,
        errorName: 'TypeError',
      }),
    ]);
  });

  it('the delay of a number, of a delay function in milliseconds, and of backoff(), known before the wait', () => {
    expect(retriesOf([e1], { count: 1, delay: 7 })[0]?.delay).toBe(7);
    expect(retriesOf([e1, e2], { count: 2, delay: (_e, n) => n * 100 }).map((r) => r.delay)).toEqual([
      100, 200,
    ]);
    const delay = backoff({ initialDelay: 40, factor: 2, jitter: 'none' });
    expect(retriesOf([e1, e2, e3], { count: 3, delay }).map((r) => r.delay)).toEqual([40, 80, 160]);
  });

  it('no delay for a notifier that does not say how long it waits, and none for a nonsense delay property', () => {
    expect(retriesOf([e1], { count: 1, delay: () => timer(5) })[0]).not.toHaveProperty('delay');
    const odd = Object.assign(timer(5), { delay: -1 });
    expect(retriesOf([e1], { count: 1, delay: () => odd })[0]).not.toHaveProperty('delay');
  });

  it('no maxRetries without a cap; the HTTP status of an error that has one', () => {
    const http = Object.assign(new Error('HTTP 503'), { name: 'HttpStatusError', status: 503 });
    const [retry] = retriesOf([http], {});
    expect(retry).not.toHaveProperty('maxRetries');
    expect(retry).toMatchObject({ errorName: 'HttpStatusError', status: 503, retryCount: 1 });
  });

  it('reads nothing it cannot: a thrown string, a status getter that throws, a status that is not a number', () => {
    const hostile = Object.defineProperty(new Error('boom'), 'status', {
      get() {
        throw new Error('no');
      },
    });
    const [fromString, fromHostile, fromText] = retriesOf(
      ['socket hang up', hostile, Object.assign(new Error('x'), { status: '503' })],
      { count: 3 },
    );
    expect(fromString).not.toHaveProperty('errorName');
    expect(fromString).not.toHaveProperty('status');
    expect(fromHostile).toMatchObject({ errorName: 'Error' });
    expect(fromHostile).not.toHaveProperty('status');
    expect(fromText).not.toHaveProperty('status');
  });

  it('a delay function that throws errors the result before any retry event', () => {
    const thrown = new Error('bad delay');
    const events: unknown[] = [];
    let error: unknown;
    throwError(() => e1)
      .pipe(
        retryAsEvents({
          count: 2,
          delay: () => {
            throw thrown;
          },
        }),
      )
      .subscribe({ next: (e) => events.push(e), error: (e) => (error = e) });
    expect(events).toEqual([]);
    expect(error).toBe(thrown);
  });
});

describe('retryAsEvents: waits longer than a timer holds', () => {
  // setTimeout holds at most 2^31 - 1 ms (24.8 days); past it Node fires at once. A wait that long is what a
  // Retry-After of a month or an unbounded backoff asks for: it must wait, not retry at once.
  it.each([
    ['a delay in milliseconds', { count: 1, delay: 2 ** 31 }],
    ['a delay function that answers in milliseconds', { count: 1, delay: () => 2 ** 32 }],
    ['backoff', { count: 1, delay: backoff({ initialDelay: 2 ** 31, maxDelay: 2 ** 31, jitter: 'none' }) }],
  ] as const)(
    '%s past 2^31 ms: no second attempt within 200 ms, and unsubscribing clears the wait',
    async (_, options) => {
      let subscriptions = 0;
      const source = defer(() => {
        subscriptions++;
        return throwError(() => new Error('connection reset'));
      });
      const seen: unknown[] = [];
      const subscription = source.pipe(retryAsEvents(options)).subscribe((event) => seen.push(event));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(subscriptions).toBe(1);
      expect(seen).toMatchObject([{ type: 'retry', delay: expect.any(Number) }]);
      expect((seen[0] as { delay: number }).delay).toBeGreaterThanOrEqual(2 ** 31);
      subscription.unsubscribe();
    },
  );
});
