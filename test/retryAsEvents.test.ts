import {
  backoff,
  CleanturnError,
  EffectKeyError,
  isRetryable,
  MissingFinishError,
  RetriesExhaustedError,
  type RetryAsEventsOptions,
  requireFinish,
  retryAsEvents,
} from 'cleanturn';
import { finish, retry, text } from 'cleanturn/testing';
import { defer, EMPTY, Observable, of, take, takeWhile, tap, throwError, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it, vi } from 'vitest';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** A source whose n-th subscription subscribes to the n-th observable (the last one again after that). */
function attemptsOf<T>(...attempts: Observable<T>[]): Observable<T> {
  let next = 0;
  return defer(() => attempts[Math.min(next++, attempts.length - 1)] as Observable<T>);
}

const e1 = new Error('first failed');
const e2 = new Error('second failed');
const e3 = new Error('third failed');

// biome-ignore format: an aligned value table
const v = {
  a: text('Checking order ORD-7781. '),
  b: text('Refunding the dam'),
  c: text('The book arrived damaged.'),
  f: finish('stop'),
  r: retry('first failed', e1),
  s: retry('second failed', e2),
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

  it('with a numeric delay, waits in virtual time and emits the retry when it resubscribes', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold('         -b-f-|', v);
      const firstSubs = '   ^--!';
      const secondSubs = '  --------^----!';
      const expected = '    -a------rb-f-|';

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
      const expected = '    ----r------sa-f-|';

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
      const expected = '    ----r------sa-f-|';

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
      const expected = '       -a--rb-f-|';

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
    expect(values).toEqual([v.r, v.a, v.f]);
    expect(subscriptions).toBe(2);
  });
});

describe('retryAsEvents: the retry event is emitted only when it resubscribes', () => {
  it('completes without a retry event when the delay notifier completes without a value', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('     -a-#', v, e1);
      const second = cold('    -b-f-|', v);
      const notifier = cold('     ---|');
      const firstSubs = '      ^--!';
      const notifierSubs = '   ---^--!';
      const expected = '       -a----|';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: () => notifier }));
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(notifier.subscriptions).toBe(notifierSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('completes at once when the delay notifier is EMPTY', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('  -a-#', v, e1);
      const second = cold(' -b-f-|', v);
      const firstSubs = '   ^--!';
      const expected = '    -a-|';

      const result = attemptsOf(first, second).pipe(retryAsEvents({ count: 3, delay: () => EMPTY }));
      expectObservable(result).toBe(expected, v);
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('errors with the notifier error, without a retry event, when the delay notifier errors', () => {
    const notifierError = new Error('circuit open');
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('     -a-#', v, e1);
      const second = cold('    -b-f-|', v);
      const notifier = cold('     --#', undefined, notifierError);
      const firstSubs = '      ^--!';
      const notifierSubs = '   ---^-!';
      const expected = '       -a---#';

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
      const expected = '       -a----';

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
      const expected = '    -a---(r|)';

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
      const expected = '    --ra|';
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
      expectObservable(result).toBe('(rs#)', v, expect.any(RetriesExhaustedError));
    });
    expect(subscriptions).toBe(3);
    expect(caught).toBeInstanceOf(RetriesExhaustedError);
    expect((caught as RetriesExhaustedError).attempts.map((a) => a.error)).toEqual([e1, e2, e2]);
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
      expectObservable(result).toBe(expected, v, expect.any(RetriesExhaustedError));
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
      expectObservable(result).toBe(expected, v, expect.any(RetriesExhaustedError));
      expectSubscriptions(failing.subscriptions).toBe(failingSubs);
      expectSubscriptions(done.subscriptions).toBe([]);
    });
  });
});

describe('retryAsEvents: RetriesExhaustedError', () => {
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
      expectObservable(result).toBe(expected, v, expect.any(RetriesExhaustedError));
      expectSubscriptions(first.subscriptions).toBe(firstSubs);
      expectSubscriptions(second.subscriptions).toBe(secondSubs);
      expectSubscriptions(third.subscriptions).toBe(thirdSubs);
    });

    expect(caught).toBeInstanceOf(RetriesExhaustedError);
    expect(caught).toBeInstanceOf(CleanturnError);
    const error = caught as RetriesExhaustedError;
    expect(error.attempts).toEqual([
      { attempt: 1, reason: 'first failed', error: e1, emitted: 1 },
      { attempt: 2, reason: 'second failed', error: e2, emitted: 0 },
      { attempt: 3, reason: 'third failed', error: e3, emitted: 2 },
    ]);
    expect(error.retryable).toBe(false);
    expect(isRetryable(error)).toBe(false);
    expect(error.cause).toBe(e3);
    expect(error.name).toBe('RetriesExhaustedError');
    expect(error.message).toBe('gave up after 3 attempt(s): third failed');
  });

  it('is not retried again by an outer retryAsEvents', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -#', undefined, e1);
      const sourceSubs = '  ^!';
      const result = source.pipe(retryAsEvents({ count: 0 }), retryAsEvents({ count: 5 }));
      expectObservable(result).toBe('-#', undefined, expect.any(RetriesExhaustedError));
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
    const fatal = new EffectKeyError('issue_refund', new TypeError('cycle'));
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
        r: retry('the stream completed without a finish event', new MissingFinishError()),
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
      [new MissingFinishError(), true],
      [new EffectKeyError('issue_refund', undefined), false],
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
      expectObservable(result).toBe('-rf|', { ...v, r: retry('upstream: first failed', e1) });
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
    expect(() => backoff({ initialDelay: -1 })).toThrow(RangeError);
    expect(() => backoff({ maxDelay: -1 })).toThrow(RangeError);
    expect(() => backoff({ factor: 0.5 })).toThrow(RangeError);
    expect(() => backoff({ initialDelay: Number.NaN })).toThrow(RangeError);
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
      const expected = '    -r----';

      // Attempt 2 fails synchronously, while the synchronous notifier of retry 1 is still emitting.
      const source = defer(() => (++subscriptions === 1 ? first : throwError(() => e2)));
      const delay = (_error: unknown, retryCount: number) => (retryCount === 1 ? of('now') : pending);

      expectObservable(source.pipe(retryAsEvents({ count: 5, delay })), unsub).toBe(expected, v);
      expectSubscriptions(pending.subscriptions).toBe(pendingSubs);
    });
    expect(subscriptions).toBe(2);
  });
});
