// The standard operator checks of RxJS's own specs, run for every operator and policy of cleanturn: basic
// behaviour, source error, empty, never, early unsubscribe, unsubscription chains, silence after the end,
// and (for the operators that take one) a user callback that throws.
import {
  type Attempted,
  accumulateTurn,
  assembleToolCalls,
  bufferUntilFinish,
  cleanTurn,
  dedupeByEffectKey,
  effectKey,
  type FinishEvent,
  lateExecutionPolicy,
  MissingFinishError,
  naivePolicy,
  type ProviderEvent,
  requireFinish,
  resetOnlyPolicy,
  resetOnRetry,
  retryAsEvents,
  tagAttempts,
} from 'cleanturn';
import { at, call, finish, refundArgs, reset, retry, text, usage } from 'cleanturn/testing';
import {
  config,
  mergeMap,
  Observable,
  type ObservableNotification,
  type OperatorFunction,
  of,
  take,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** The error the sources fail with. */
const boom = new Error('connection reset');

/** The events the letters `a`, `b` and `c` of a diagram stand for. */
type Abc<T> = Record<'a' | 'b' | 'c', T>;

/** One row of the table: an operator, sample input events and what it makes of them. */
interface OperatorCheck {
  name: string;
  /** Pipes a source through a fresh instance of the operator. */
  apply: (source: Observable<unknown>) => Observable<unknown>;
  /** Sample input events, meant to arrive in the order a, b, c. */
  values: Abc<unknown>;
  /** What the operator emits for each of them, in the same frame. */
  expected: Abc<unknown>;
  /** What the result errors with when the source errors with `error` after `a`; default `error` itself. */
  errorFor?: (error: unknown) => unknown;
  /** The error of the result when the source completes empty; default: the result completes. */
  emptyError?: unknown;
}

function row<I>(
  name: string,
  make: () => OperatorFunction<I, unknown>,
  values: Abc<I>,
  expected: Abc<unknown>,
  more: Pick<OperatorCheck, 'errorFor' | 'emptyError'> = {},
): OperatorCheck {
  return { name, apply: (source) => (source as Observable<I>).pipe(make()), values, expected, ...more };
}

const lookup = call('c2', 'lookup_order', { order_id: 'ORD-7781' });
const refund = call('c1', 'issue_refund', refundArgs);

const table: OperatorCheck[] = [
  row<ProviderEvent>(
    'tagAttempts',
    () => tagAttempts(),
    { a: text('Checking'), b: refund, c: finish() },
    { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) },
  ),
  row(
    'resetOnRetry',
    () => resetOnRetry(),
    {
      a: at(1, text('Refunding the dam')),
      b: at(2, retry('connection reset')),
      c: at(2, text('Refund started.')),
    },
    {
      a: at(1, text('Refunding the dam')),
      b: reset(2, 'connection reset'),
      c: at(2, text('Refund started.')),
    },
  ),
  row(
    'bufferUntilFinish',
    () => bufferUntilFinish<Attempted<ProviderEvent>>({ early: (c) => c.name === 'lookup_order' }),
    { a: at(1, text('Checking')), b: at(1, lookup), c: at(1, finish()) },
    { a: at(1, text('Checking')), b: at(1, lookup), c: at(1, finish()) },
  ),
  row<ProviderEvent>(
    'dedupeByEffectKey',
    () => dedupeByEffectKey({ turnId: 'turn-42' }),
    { a: refund, b: lookup, c: finish() },
    {
      a: { ...refund, effectKey: effectKey('turn-42', refund) },
      b: { ...lookup, effectKey: effectKey('turn-42', lookup) },
      c: finish(),
    },
  ),
  row<ProviderEvent>(
    'assembleToolCalls',
    () => assembleToolCalls(),
    { a: text('Checking'), b: refund, c: finish() },
    { a: text('Checking'), b: refund, c: finish() },
  ),
  row<ProviderEvent>(
    'cleanTurn',
    () => cleanTurn({ turnId: 'turn-42' }),
    { a: text('Checking'), b: usage(120, 8), c: finish() },
    { a: at(1, text('Checking')), b: at(1, usage(120, 8)), c: at(1, finish()) },
  ),
  row(
    'accumulateTurn',
    () => accumulateTurn(),
    { a: at(1, text('Refund ')), b: at(1, text('started.')), c: at(1, finish()) },
    {
      a: snapshot('Refund ', undefined),
      b: snapshot('Refund started.', undefined),
      c: snapshot('Refund started.', at(1, finish())),
    },
  ),
  row<ProviderEvent>(
    'retryAsEvents',
    () => retryAsEvents({ count: 0 }),
    { a: text('Checking'), b: usage(120, 8), c: finish() },
    { a: text('Checking'), b: usage(120, 8), c: finish() },
    {
      // With no retry allowed, the first failure exhausts the cap: the error is wrapped with the record.
      errorFor: (error) =>
        expect.objectContaining({
          name: 'RetriesExhaustedError',
          retryable: false,
          attempts: [{ attempt: 1, reason: 'connection reset', error, emitted: 1 }],
        }),
    },
  ),
  row<ProviderEvent>(
    'requireFinish',
    () => requireFinish(),
    { a: text('Checking'), b: usage(120, 8), c: finish() },
    { a: text('Checking'), b: usage(120, 8), c: finish() },
    { emptyError: new MissingFinishError() },
  ),
  row<ProviderEvent>(
    'naivePolicy',
    () => naivePolicy(),
    { a: text('Checking'), b: refund, c: finish() },
    { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) },
  ),
  row<ProviderEvent>(
    'resetOnlyPolicy',
    () => resetOnlyPolicy(),
    { a: text('Checking'), b: refund, c: finish() },
    { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) },
  ),
  row<ProviderEvent>(
    'lateExecutionPolicy',
    () => lateExecutionPolicy(),
    { a: text('Checking'), b: usage(120, 8), c: finish() },
    { a: at(1, text('Checking')), b: at(1, usage(120, 8)), c: at(1, finish()) },
  ),
];

/** The snapshot accumulateTurn emits for attempt 1 with this text and finish. */
function snapshot(turnText: string, turnFinish: Attempted<FinishEvent> | undefined) {
  return {
    attempt: 1,
    text: turnText,
    toolCalls: [],
    finish: turnFinish,
    usage: undefined,
    attempts: [
      turnFinish === undefined
        ? { attempt: 1, outcome: 'streaming', textLength: turnText.length, toolCalls: 0 }
        : {
            attempt: 1,
            outcome: 'completed',
            finishReason: turnFinish.reason,
            textLength: turnText.length,
            toolCalls: 0,
          },
    ],
  };
}

/** Runs `body` and returns every notification that RxJS dropped because its subscriber had already stopped. */
function stoppedNotifications(body: () => void): ObservableNotification<unknown>[] {
  const stopped: ObservableNotification<unknown>[] = [];
  const previous = config.onStoppedNotification;
  config.onStoppedNotification = (notification) => {
    stopped.push(notification);
  };
  try {
    body();
  } finally {
    config.onStoppedNotification = previous;
  }
  return stopped;
}

it('covers every operator and policy', () => {
  expect(table.map((r) => r.name).sort()).toEqual(
    [
      'tagAttempts',
      'resetOnRetry',
      'bufferUntilFinish',
      'dedupeByEffectKey',
      'assembleToolCalls',
      'cleanTurn',
      'accumulateTurn',
      'retryAsEvents',
      'requireFinish',
      'naivePolicy',
      'resetOnlyPolicy',
      'lateExecutionPolicy',
    ].sort(),
  );
});

for (const op of table) {
  const errorFor = op.errorFor ?? ((error: unknown) => error);

  describe(`${op.name}: standard checks`, () => {
    it('emits what the sample events become, frame for frame', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-b-c-|', op.values);
        const sourceSubs = '  ^------!';
        const expected = '    -a-b-c-|';

        expectObservable(op.apply(source)).toBe(expected, op.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('passes a source error through', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-#', op.values, boom);
        const sourceSubs = '  ^--!';
        const expected = '    -a-#';

        expectObservable(op.apply(source)).toBe(expected, op.expected, errorFor(boom));
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it(op.emptyError === undefined ? 'completes on an empty source' : 'errors on an empty source', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' |');
        const sourceSubs = '  (^!)';
        const expected = op.emptyError === undefined ? '|' : '#';

        expectObservable(op.apply(source)).toBe(expected, undefined, op.emptyError);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('stays silent on a source that never emits', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -');
        const unsub = '       -----!';
        const sourceSubs = '  ^----!';
        const expected = '    -';

        expectObservable(op.apply(source), unsub).toBe(expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('tears down the source when the result is unsubscribed early', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-b-c-|', op.values);
        const unsub = '       ----!';
        const sourceSubs = '  ^---!';
        const expected = '    -a-b';

        expectObservable(op.apply(source), unsub).toBe(expected, op.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('does not break unsubscription chains when the result is unsubscribed explicitly', () => {
      newScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
        const source = hot('  -a-b-c-|', op.values);
        const unsub = '       -----!';
        const sourceSubs = '  ^----!';
        const expected = '    -a-b-';

        const result = source.pipe(
          mergeMap((x) => of(x)),
          op.apply,
          mergeMap((x) => of(x)),
        );

        expectObservable(result, unsub).toBe(expected, op.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('stops a synchronous source as soon as the consumer has what it wants', () => {
      // A synchronous source runs inside `subscribe`: only a subscriber that is already closed can stop it.
      const produced: string[] = [];
      const source = new Observable<unknown>((subscriber) => {
        for (const letter of ['a', 'b', 'c'] as const) {
          if (subscriber.closed) return;
          produced.push(letter);
          subscriber.next(op.values[letter]);
        }
        subscriber.complete();
      });
      const received: unknown[] = [];
      op.apply(source)
        .pipe(take(1))
        .subscribe((value) => received.push(value));
      expect(received).toEqual([op.expected.a]);
      expect(produced).toEqual(['a']);
    });

    it('never emits after it completes or errors', () => {
      const stopped = stoppedNotifications(() => {
        newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const completing = cold(' -a-b-c-|', op.values);
          const completingSubs = '   ^------!';
          const erroring = cold('    -a-#', op.values, boom);
          const erroringSubs = '     ^--!';

          expectObservable(op.apply(completing)).toBe('-a-b-c-|', op.expected);
          expectObservable(op.apply(erroring)).toBe('-a-#', op.expected, errorFor(boom));
          expectSubscriptions(completing.subscriptions).toBe(completingSubs);
          expectSubscriptions(erroring.subscriptions).toBe(erroringSubs);
        });
      });
      expect(stopped).toEqual([]);
    });
  });
}

describe('the silence check itself', () => {
  it('catches an operator that emits after completing', () => {
    const emitsLate =
      <T>(): OperatorFunction<T, T | 'late'> =>
      (source) =>
        new Observable<T | 'late'>((subscriber) =>
          source.subscribe({
            next: (value) => subscriber.next(value),
            error: (error) => subscriber.error(error),
            complete: () => {
              subscriber.complete();
              subscriber.next('late');
            },
          }),
        );
    const stopped = stoppedNotifications(() => {
      newScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-a-|').pipe(emitsLate())).toBe('-a-|');
      });
    });
    expect(stopped).toEqual([{ kind: 'N', value: 'late', error: undefined }]);
  });
});

describe('retryAsEvents: errors it does not retry', () => {
  it('passes the original error through when shouldRetry declines it', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-#', { a: text('Checking') }, boom);
      const sourceSubs = '  ^--!';
      const expected = '    -a-#';

      const result = source.pipe(retryAsEvents({ count: 3, shouldRetry: () => false }));

      expectObservable(result).toBe(expected, { a: text('Checking') }, boom);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('wraps the error in RetriesExhaustedError when count is 0', () => {
    let caught: unknown;
    newScheduler().run(({ cold, expectSubscriptions }) => {
      const source = cold(' -#', undefined, boom);
      const sourceSubs = '  ^!';
      source.pipe(retryAsEvents({ count: 0 })).subscribe({ error: (error) => (caught = error) });
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
    expect(caught).toBeInstanceOf(Error);
    expect(caught).not.toBe(boom);
    expect(caught).toMatchObject({ name: 'RetriesExhaustedError', cause: boom });
  });
});

describe('a user callback that throws', () => {
  const thrown = new Error('the callback failed');
  const fail = (): never => {
    throw thrown;
  };

  /** A callback case: the source, what the result does, and where the source is torn down. */
  interface CallbackCase {
    name: string;
    apply: (source: Observable<unknown>) => Observable<unknown>;
    source: string;
    values: Record<string, unknown>;
    expected: string;
    expectedValues: Record<string, unknown>;
    sourceSubs: string;
  }

  function callbackCase<I>(
    name: string,
    make: () => OperatorFunction<I, unknown>,
    rest: Omit<CallbackCase, 'name' | 'apply'> & { values: Record<string, I> },
  ): CallbackCase {
    return { name, apply: (source) => (source as Observable<I>).pipe(make()), ...rest };
  }

  const attempted = { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) };
  const provider: Record<string, ProviderEvent> = { a: text('Checking'), b: refund, c: finish() };

  // biome-ignore format: aligned diagrams
  const cases: CallbackCase[] = [
    callbackCase('bufferUntilFinish: early', () => bufferUntilFinish({ early: fail }), {
      source:     '-a-b-c-|', values: attempted,
      expected:   '-a-#',     expectedValues: attempted,
      sourceSubs: '^--!',
    }),
    callbackCase('dedupeByEffectKey: key', () => dedupeByEffectKey({ turnId: 'turn-42', key: fail }), {
      source:     '-a-b-c-|', values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    }),
    callbackCase('dedupeByEffectKey: seen.has', () => dedupeByEffectKey({ turnId: 'turn-42', seen: { has: fail } }), {
      source:     '-a-b-c-|', values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    }),
    callbackCase('cleanTurn: early', () => cleanTurn({ turnId: 'turn-42', early: fail }), {
      source:     '-a-b-c-|', values: provider,
      expected:   '-a-#',     expectedValues: attempted,
      sourceSubs: '^--!',
    }),
    // The key is computed when the call is released, at the finish.
    callbackCase('cleanTurn: key', () => cleanTurn({ turnId: 'turn-42', key: fail }), {
      source:     '-a-b-c-|', values: provider,
      expected:   '-a---#',   expectedValues: attempted,
      sourceSubs: '^----!',
    }),
    callbackCase('retryAsEvents: shouldRetry', () => retryAsEvents({ count: 3, shouldRetry: fail }), {
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    }),
    callbackCase('retryAsEvents: reason', () => retryAsEvents({ count: 3, reason: fail }), {
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    }),
    callbackCase('retryAsEvents: delay', () => retryAsEvents({ count: 3, delay: fail }), {
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    }),
  ];

  for (const c of cases) {
    it(`${c.name}: errors the result with what it threw and unsubscribes the source`, () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(c.source, c.values, boom);

        expectObservable(c.apply(source)).toBe(c.expected, c.expectedValues, thrown);
        expectSubscriptions(source.subscriptions).toBe(c.sourceSubs);
      });
    });
  }
});
