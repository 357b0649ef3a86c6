import {
  CleanturnError,
  isRetryable,
  requireFinish,
  resetOnRetry,
  retryAsEvents,
  type TurnError,
  tagAttempts,
} from 'cleanturn';
import { at, finish, reset, retrying, text } from 'cleanturn/testing';
import { defer, type Observable, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { missingFinishError } from '../src/errors.js';
import { expectTurnError } from './support/errors.js';

const newScheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

// biome-ignore format: an aligned value table
const v = {
  a: text('Checking order ORD-7781. '),
  b: text('Refunding the dam'),
  f: finish('stop'),
  r: retrying('connection reset'),
};

describe('requireFinish on untagged streams', () => {
  it('completes when the stream finished', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-f-|', v);
      const sourceSubs = '  ^----!';
      const expected = '    -a-f-|';

      expectObservable(source.pipe(requireFinish())).toBe(expected, v);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('errors with a retryable missing-finish TurnError, at the completion, when the finish is missing', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-b-|', v);
      const sourceSubs = '  ^----!';
      const expected = '    -a-b-#';

      expectObservable(source.pipe(requireFinish())).toBe(expected, v, missingFinishError());
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('the error says what happened and that a new attempt could succeed', () => {
    const error = missingFinishError();
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({ name: 'TurnError', retryable: true, attempt: undefined });
    expect(error.message).toBe('the stream completed without a finish event');
    expect(isRetryable(error)).toBe(true);
  });

  it('a retry after the finish starts an attempt that needs its own finish', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -f-r-a-|', v);
      const sourceSubs = '  ^------!';
      const expected = '    -f-r-a-#';

      expectObservable(source.pipe(requireFinish())).toBe(expected, v, missingFinishError());
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('a finish after the retry is enough', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-r-a-f-|', v);
      const sourceSubs = '  ^--------!';
      const expected = '    -a-r-a-f-|';

      expectObservable(source.pipe(requireFinish())).toBe(expected, v);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('a finish with reason error still counts as a finish', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const values = { a: v.a, e: finish('error') };
      const source = cold(' -a-e-|', values);
      const sourceSubs = '  ^----!';
      const expected = '    -a-e-|';

      expectObservable(source.pipe(requireFinish())).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('passes a source error through as it is, finish or not', () => {
    const cut = new Error('socket closed');
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-f-#', v, cut);
      const sourceSubs = '  ^----!';
      const expected = '    -a-f-#';

      expectObservable(source.pipe(requireFinish())).toBe(expected, v, cut);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('counts each subscription on its own', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const finished = cold(' -f|', v);
      const cutOff = cold('   -a|', v);
      let n = 0;
      const source = defer(() => (n++ === 0 ? finished : cutOff)).pipe(requireFinish());

      expectObservable(source).toBe('-f|', v);
      expectObservable(source).toBe('-a#', v, missingFinishError());
      expectSubscriptions(finished.subscriptions).toBe('^-!');
      expectSubscriptions(cutOff.subscriptions).toBe('^-!');
    });
  });
});

describe('requireFinish on tagged streams', () => {
  it('a finish of attempt 1 followed by a reset and no finish errors with the attempt number', () => {
    let caught: unknown;
    // biome-ignore format: an aligned value table
    const values = { a: at(1, v.a), f: at(1, finish()), R: reset(2, 'connection reset'), b: at(2, v.a) };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-f-R-b-|', values);
      const sourceSubs = '  ^--------!';
      const expected = '    -a-f-R-b-#';

      const result = source.pipe(requireFinish(), tap({ error: (error) => (caught = error) }));
      expectObservable(result).toBe(expected, values, missingFinishError(2));
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
    expectTurnError(caught, 'missing-finish');
    expect((caught as TurnError).attempt).toBe(2);
    expect((caught as TurnError).message).toBe('attempt 2 completed without a finish event');
  });

  it('after tagAttempts: a tagged retry starts the attempt whose finish is missing', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-f-r-b-|', v);
      const sourceSubs = '  ^--------!';
      const expected = '    -A-F-R-B-#';

      const result = source.pipe(tagAttempts(), requireFinish());
      expectObservable(result).toBe(
        expected,
        { A: at(1, v.a), F: at(1, v.f), R: at(2, v.r), B: at(2, v.b) },
        missingFinishError(2),
      );
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('after tagAttempts and resetOnRetry: the finish of the last attempt is enough', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-r-b-f-|', v);
      const sourceSubs = '  ^--------!';
      const expected = '    -A-R-B-F-|';

      const result = source.pipe(tagAttempts(), resetOnRetry(), requireFinish());
      expectObservable(result).toBe(expected, {
        A: at(1, v.a),
        R: reset(2, 'connection reset'),
        B: at(2, v.b),
        F: at(2, v.f),
      });
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('a late finish of an older attempt does not finish the current one', () => {
    // biome-ignore format: an aligned value table
    const values = { a: at(1, v.a), R: reset(2, 'connection reset'), b: at(2, v.b), f: at(1, finish()) };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-R-b-f-|', values);
      const sourceSubs = '  ^--------!';
      const expected = '    -a-R-b-f-#';

      expectObservable(source.pipe(requireFinish())).toBe(expected, values, missingFinishError(2));
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('an event of a newer attempt starts it even without a reset', () => {
    // biome-ignore format: an aligned value table
    const values = { a: at(1, v.a), f: at(1, finish()), b: at(2, v.b) };
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -a-f-b-|', values);
      const sourceSubs = '  ^------!';
      const expected = '    -a-f-b-#';

      expectObservable(source.pipe(requireFinish())).toBe(expected, values, missingFinishError(2));
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('reports the attempt of an empty attempt that was started by a reset', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const values = { f: at(1, finish()), R: reset(3, 'timeout') };
      const source = cold(' -f-R-|', values);
      const sourceSubs = '  ^----!';
      const expected = '    -f-R-#';

      expectObservable(source.pipe(requireFinish())).toBe(expected, values, missingFinishError(3));
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });
});

describe('requireFinish before retryAsEvents', () => {
  it('turns a clean cut-off into a retry', () => {
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const cutOff = cold(' -a-b-|', v);
      const whole = cold('       -a-f-|', v);
      const cutOffSubs = '  ^----!';
      const wholeSubs = '   -----^----!';
      const expected = '    -a-b-Ra-f-|';

      let n = 0;
      const source: Observable<{ type: string }> = defer(() => (n++ === 0 ? cutOff : whole));
      const result = source.pipe(requireFinish(), retryAsEvents({ count: 1 }));
      expectObservable(result).toBe(expected, {
        ...v,
        R: retrying('the stream completed without a finish event', missingFinishError(), {
          delay: 0,
          failedAttempt: 1,
          outputStarted: true,
          retryCount: 1,
          maxRetries: 1,
          errorName: 'TurnError',
        }),
      });
      expectSubscriptions(cutOff.subscriptions).toBe(cutOffSubs);
      expectSubscriptions(whole.subscriptions).toBe(wholeSubs);
    });
  });
});
