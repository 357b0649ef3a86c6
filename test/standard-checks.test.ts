// The standard operator checks of RxJS's own specs (test/support/standardChecks.ts), run for every operator and
// policy of cleanturn: basic behaviour, source error, empty, never, early unsubscribe, unsubscription chains, a
// synchronous source stopped at once, silence after the end, and (for the operators that take one) a user callback
// that throws.
import {
  type Attempted,
  accumulateTurn,
  assembleToolCalls,
  bufferUntilFinish,
  cleanTurn,
  dedupeByEffectKey,
  effectKey,
  lateExecutionPolicy,
  naivePolicy,
  type ProviderEvent,
  type RetryBudget,
  requireFinish,
  requireUsable,
  resetOnlyPolicy,
  resetOnRetry,
  retryAsEvents,
  retryBudget,
  tagAttempts,
} from 'cleanturn';
import { at, call, finish, helpDesk, reset, retrying, text, usage } from 'cleanturn/testing';
import { Observable, type OperatorFunction } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import { missingFinishError, retriesExhaustedError } from '../src/errors.js';
import type { FinishEvent } from '../src/types.js';
import { type StandardCheck, standardChecks, stoppedNotifications } from './support/standardChecks.js';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** The error the sources fail with. */
const boom = new Error('connection reset');

/** The operators checked so far, by name. */
const checked: string[] = [];

/** Registers the standard checks of one operator. */
function check<I>(operator: StandardCheck<I>): void {
  checked.push(operator.name);
  standardChecks(operator);
}

const lookup = call('c2', 'lookup_order', { order_id: 'ORD-7781' });
const refund = call('c1', 'issue_refund', helpDesk.refundArgs);

/** Attempt-1 events, for the callbacks that throw: the text, the refund call and the finish. */
const attempted = { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) };
/** The same events as the provider sends them (whole calls, as after assembleToolCalls). */
const provider: Record<string, AssembledEvent<ProviderEvent>> = {
  a: text('Checking'),
  b: refund,
  c: finish(),
};

check<ProviderEvent>({
  name: 'tagAttempts',
  make: () => tagAttempts(),
  values: { a: text('Checking'), b: refund, c: finish() },
  expected: { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) },
});

check({
  name: 'resetOnRetry',
  make: () => resetOnRetry(),
  values: {
    a: at(1, text('Refunding the dam')),
    b: at(2, retrying('connection reset')),
    c: at(2, text('Refund started.')),
  },
  expected: {
    a: at(1, text('Refunding the dam')),
    b: reset(2, 'connection reset'),
    c: at(2, text('Refund started.')),
  },
});

// biome-ignore format: aligned diagrams
check<Attempted<ProviderEvent>>({
  name: 'bufferUntilFinish',
  make: () => bufferUntilFinish({ early: (c) => c.name === 'lookup_order' }),
  values: { a: at(1, text('Checking')), b: at(1, lookup), c: at(1, finish()) },
  expected: { a: at(1, text('Checking')), b: at(1, lookup), c: at(1, finish()) },
  throwing: [
    {
      callback: 'early', make: (fail) => bufferUntilFinish({ early: fail }),
      source:     '-a-b-c-|', values: attempted,
      expected:   '-a-#',     expectedValues: attempted,
      sourceSubs: '^--!',
    },
  ],
});

// biome-ignore format: aligned diagrams
check<ProviderEvent>({
  name: 'dedupeByEffectKey',
  make: () => dedupeByEffectKey({ turnId: 'turn-42' }),
  values: { a: refund, b: lookup, c: finish() },
  expected: {
    a: { ...refund, effectKey: effectKey('turn-42', refund) },
    b: { ...lookup, effectKey: effectKey('turn-42', lookup) },
    c: finish(),
  },
  throwing: [
    {
      callback: 'key', make: (fail) => dedupeByEffectKey({ turnId: 'turn-42', key: fail }),
      source:     '-a-b-c-|', values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    },
    {
      callback: 'seen.has', make: (fail) => dedupeByEffectKey({ turnId: 'turn-42', seen: { has: fail } }),
      source:     '-a-b-c-|', values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    },
  ],
});

check<ProviderEvent>({
  name: 'assembleToolCalls',
  make: () => assembleToolCalls(),
  values: { a: text('Checking'), b: refund, c: finish() },
  expected: { a: text('Checking'), b: refund, c: finish() },
});

// biome-ignore format: aligned diagrams
check<AssembledEvent<ProviderEvent>>({
  name: 'cleanTurn',
  make: () => cleanTurn({ turnId: 'turn-42' }),
  values: { a: text('Checking'), b: usage(120, 8), c: finish() },
  expected: { a: at(1, text('Checking')), b: at(1, usage(120, 8)), c: at(1, finish()) },
  throwing: [
    {
      callback: 'early', make: (fail) => cleanTurn({ turnId: 'turn-42', early: fail }),
      source:     '-a-b-c-|', values: provider,
      expected:   '-a-#',     expectedValues: attempted,
      sourceSubs: '^--!',
    },
    // The key is computed when the call is released, at the finish.
    {
      callback: 'key', make: (fail) => cleanTurn({ turnId: 'turn-42', key: fail }),
      source:     '-a-b-c-|', values: provider,
      expected:   '-a---#',   expectedValues: attempted,
      sourceSubs: '^----!',
    },
  ],
});

// The same policy written as the operators one by one, in pipe calls of their own: they fuse into one subscriber.
const oneByOne =
  (options: { early?: () => boolean; key?: () => never } = {}) =>
  (source: Observable<AssembledEvent<ProviderEvent>>) =>
    source
      .pipe(tagAttempts())
      .pipe(resetOnRetry())
      .pipe(bufferUntilFinish({ early: options.early }))
      .pipe(dedupeByEffectKey({ turnId: 'turn-42', key: options.key }));

// biome-ignore format: aligned diagrams
check<AssembledEvent<ProviderEvent>>({
  name: 'tagAttempts → resetOnRetry → bufferUntilFinish → dedupeByEffectKey, one pipe call each',
  make: () => oneByOne(),
  values: { a: text('Checking'), b: usage(120, 8), c: finish() },
  expected: { a: at(1, text('Checking')), b: at(1, usage(120, 8)), c: at(1, finish()) },
  throwing: [
    {
      callback: 'early', make: (fail) => oneByOne({ early: fail }),
      source:     '-a-b-c-|', values: provider,
      expected:   '-a-#',     expectedValues: attempted,
      sourceSubs: '^--!',
    },
    {
      callback: 'key', make: (fail) => oneByOne({ key: fail }),
      source:     '-a-b-c-|', values: provider,
      expected:   '-a---#',   expectedValues: attempted,
      sourceSubs: '^----!',
    },
  ],
});

check({
  name: 'accumulateTurn',
  make: () => accumulateTurn(),
  values: { a: at(1, text('Refund ')), b: at(1, text('started.')), c: at(1, finish()) },
  expected: {
    a: snapshot('Refund ', undefined),
    b: snapshot('Refund started.', undefined),
    c: snapshot('Refund started.', at(1, finish())),
  },
});

// biome-ignore format: aligned diagrams
check<ProviderEvent>({
  name: 'retryAsEvents',
  // Retries allowed, but the source's error is declined: it passes through as it is, after one subscription. (With
  // count 0 the operator would be the source itself, as RxJS retry(0) is, and these checks would check nothing.)
  make: () => retryAsEvents({ count: 3, shouldRetry: () => false }),
  values: { a: text('Checking'), b: usage(120, 8), c: finish() },
  expected: { a: text('Checking'), b: usage(120, 8), c: finish() },
  throwing: [
    {
      callback: 'shouldRetry', make: (fail) => retryAsEvents({ count: 3, shouldRetry: fail }),
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    },
    {
      callback: 'reason', make: (fail) => retryAsEvents({ count: 3, reason: fail }),
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    },
    {
      callback: 'delay', make: (fail) => retryAsEvents({ count: 3, delay: fail }),
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    },
  ],
});

/** A budget of your own whose `tryWithdraw` throws (a deposit that throws fails at subscription: see retryAsEventsBudget.test.ts). */
function throwingBudget(fail: () => never): RetryBudget {
  return {
    deposit: () => {},
    tryWithdraw: fail,
    state: () => ({ deposits: 0, withdrawals: 0, available: 0, refusals: 0 }),
  };
}

// biome-ignore format: aligned diagrams
check<ProviderEvent>({
  name: 'retryAsEvents with a budget',
  // A budget that refuses every retry: the source's error becomes a retries-exhausted TurnError (limit budget) in its frame, with
  // the record of the one attempt, and the source is not subscribed again.
  make: () => retryAsEvents({ count: 3, budget: retryBudget({ percentCanRetry: 0, minRetriesPerSec: 0 }) }),
  values: { a: text('Checking'), b: usage(120, 8), c: finish() },
  expected: { a: text('Checking'), b: usage(120, 8), c: finish() },
  errorFor: (error) =>
    retriesExhaustedError('budget', [{ attempt: 1, reason: 'connection reset', error, emitted: 1 }]),
  throwing: [
    {
      callback: 'budget.tryWithdraw', make: (fail) => retryAsEvents({ count: 3, budget: throwingBudget(fail) }),
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    },
    // The clock is read at the deposit (subscription) and at the withdrawal: it fails at the second reading.
    {
      callback: 'the clock (now)',
      make: (fail) => {
        let readings = 0;
        return retryAsEvents({ count: 3, budget: retryBudget({ now: () => (readings++ === 0 ? 0 : fail()) }) });
      },
      source:     '-a-#',     values: provider,
      expected:   '-a-#',     expectedValues: provider,
      sourceSubs: '^--!',
    },
  ],
});

check<AssembledEvent<ProviderEvent>>({
  name: 'requireFinish',
  make: () => requireFinish(),
  values: { a: text('Checking'), b: usage(120, 8), c: finish() },
  expected: { a: text('Checking'), b: usage(120, 8), c: finish() },
  emptyError: missingFinishError(),
});

// biome-ignore format: aligned diagrams
check<AssembledEvent<ProviderEvent>>({
  name: 'requireUsable',
  make: () => requireUsable({ validateArgs: () => undefined }),
  values: { a: text('Checking'), b: refund, c: finish('tool-calls') },
  expected: { a: text('Checking'), b: refund, c: finish('tool-calls') },
  // The checks run at the finish.
  throwing: [
    {
      callback: 'validateArgs', make: (fail) => requireUsable({ validateArgs: fail }),
      source:     '-a-b-c-|', values: { a: text('Checking'), b: refund, c: finish('tool-calls') },
      expected:   '-a-b-#',   expectedValues: { a: text('Checking'), b: refund },
      sourceSubs: '^----!',
      // A check that throws is a bug, not an unusable answer: never retried, with what it threw as the cause.
      errorFor: (thrown) => expect.objectContaining({ name: 'UsageError', retryable: false, cause: thrown }),
    },
    {
      callback: 'checks[0]', make: (fail) => requireUsable({ checks: [fail] }),
      source:     '-a-b-c-|', values: { a: text('Checking'), b: refund, c: finish('tool-calls') },
      expected:   '-a-b-#',   expectedValues: { a: text('Checking'), b: refund },
      sourceSubs: '^----!',
      // A check that throws is a bug, not an unusable answer: never retried, with what it threw as the cause.
      errorFor: (thrown) => expect.objectContaining({ name: 'UsageError', retryable: false, cause: thrown }),
    },
  ],
});

check<ProviderEvent>({
  name: 'naivePolicy',
  make: () => naivePolicy(),
  values: { a: text('Checking'), b: refund, c: finish() },
  expected: { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) },
});

check<ProviderEvent>({
  name: 'resetOnlyPolicy',
  make: () => resetOnlyPolicy(),
  values: { a: text('Checking'), b: refund, c: finish() },
  expected: { a: at(1, text('Checking')), b: at(1, refund), c: at(1, finish()) },
});

check<ProviderEvent>({
  name: 'lateExecutionPolicy',
  make: () => lateExecutionPolicy(),
  values: { a: text('Checking'), b: usage(120, 8), c: finish() },
  expected: { a: at(1, text('Checking')), b: at(1, usage(120, 8)), c: at(1, finish()) },
});

/** The snapshot accumulateTurn emits for attempt 1 with this text and finish. */
function snapshot(turnText: string, turnFinish: Attempted<FinishEvent> | undefined) {
  return {
    attempt: 1,
    text: turnText,
    reasoning: '',
    toolCalls: [],
    finish: turnFinish,
    responseId: undefined,
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

it('covers every operator and policy', () => {
  expect(checked.sort()).toEqual(
    [
      'tagAttempts',
      'resetOnRetry',
      'bufferUntilFinish',
      'dedupeByEffectKey',
      'assembleToolCalls',
      'cleanTurn',
      'tagAttempts → resetOnRetry → bufferUntilFinish → dedupeByEffectKey, one pipe call each',
      'accumulateTurn',
      'retryAsEvents',
      'retryAsEvents with a budget',
      'requireFinish',
      'requireUsable',
      'naivePolicy',
      'resetOnlyPolicy',
      'lateExecutionPolicy',
    ].sort(),
  );
});

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

  it('with count 0 is the source itself, as RxJS retry(0): the error passes through unwrapped', () => {
    let caught: unknown;
    newScheduler().run(({ cold, expectSubscriptions }) => {
      const source = cold(' -#', undefined, boom);
      const sourceSubs = '  ^!';
      source.pipe(retryAsEvents({ count: 0 })).subscribe({ error: (error) => (caught = error) });
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
    expect(caught).toBe(boom);
  });

  it('wraps the error in retries-exhausted TurnError when the retries are used up', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -#', undefined, boom);
      const sourceSubs = [' ^!', ' -^!'];
      const expected = '    -r#';

      const result = source.pipe(retryAsEvents({ count: 1 }));

      expectObservable(result).toBe(
        expected,
        {
          r: retrying('connection reset', boom, {
            delay: 0,
            failedAttempt: 1,
            outputStarted: false,
            retryCount: 1,
            maxRetries: 1,
            errorName: boom.name,
          }),
        },
        expect.objectContaining({
          name: 'TurnError',
          retryable: false,
          attempts: [
            { attempt: 1, reason: 'connection reset', error: boom, emitted: 0 },
            { attempt: 2, reason: 'connection reset', error: boom, emitted: 0 },
          ],
        }),
      );
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });
});
