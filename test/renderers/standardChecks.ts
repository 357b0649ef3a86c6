// The standard operator checks of RxJS's own specs (as in test/standard-checks.test.ts), for the operators of
// the renderer entries: basic behaviour, source error, empty, never, early unsubscribe, unsubscription chains,
// a synchronous source stopped at once, silence after the end, and callbacks that throw.
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

/** One operator under check: sample events a, b, c and what each becomes (one value each, same frame). */
export interface StandardCheck<I> {
  name: string;
  make: () => OperatorFunction<I, unknown>;
  values: Record<'a' | 'b' | 'c', I>;
  expected: Record<'a' | 'b' | 'c', unknown>;
  /**
   * Operators with user callbacks: each one made to throw. It must run for the first event, `a` of `values`
   * (default: the sample events).
   */
  throwing?: readonly {
    callback: string;
    make: (fail: () => never) => OperatorFunction<I, unknown>;
    values?: Record<'a' | 'b' | 'c', I>;
  }[];
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

export function standardChecks<I>(check: StandardCheck<I>): void {
  const apply = (source: Observable<I>) => source.pipe(check.make());

  describe(`${check.name}: standard checks`, () => {
    it('emits what the sample events become, frame for frame', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-b-c-|', check.values);
        const sourceSubs = '  ^------!';
        const expected = '    -a-b-c-|';

        expectObservable(apply(source)).toBe(expected, check.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('passes a source error through', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-#', check.values, boom);
        const sourceSubs = '  ^--!';
        const expected = '    -a-#';

        expectObservable(apply(source)).toBe(expected, check.expected, boom);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('completes on an empty source', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold<I>(' |');
        const sourceSubs = '  (^!)';
        const expected = '    |';

        expectObservable(apply(source)).toBe(expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('stays silent on a source that never emits', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold<I>(' -');
        const unsub = '       -----!';
        const sourceSubs = '  ^----!';
        const expected = '    -';

        expectObservable(apply(source), unsub).toBe(expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('tears down the source when the result is unsubscribed early', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-b-c-|', check.values);
        const unsub = '       ----!';
        const sourceSubs = '  ^---!';
        const expected = '    -a-b';

        expectObservable(apply(source), unsub).toBe(expected, check.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('does not break unsubscription chains when the result is unsubscribed explicitly', () => {
      newScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
        const source = hot('  -a-b-c-|', check.values);
        const unsub = '       -----!';
        const sourceSubs = '  ^----!';
        const expected = '    -a-b-';

        const result = source.pipe(
          mergeMap((x) => of(x)),
          check.make(),
          mergeMap((x) => of(x)),
        );

        expectObservable(result, unsub).toBe(expected, check.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('stops a synchronous source as soon as the consumer has what it wants', () => {
      const produced: string[] = [];
      const source = new Observable<I>((subscriber) => {
        for (const letter of ['a', 'b', 'c'] as const) {
          if (subscriber.closed) return;
          produced.push(letter);
          subscriber.next(check.values[letter]);
        }
        subscriber.complete();
      });
      const received: unknown[] = [];
      apply(source)
        .pipe(take(1))
        .subscribe((value) => received.push(value));
      expect(received).toEqual([check.expected.a]);
      expect(produced).toEqual(['a']);
    });

    it('never emits after it completes or errors', () => {
      const stopped = stoppedNotifications(() => {
        newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const completing = cold(' -a-b-c-|', check.values);
          const erroring = cold('    -a-#', check.values, boom);

          expectObservable(apply(completing)).toBe('-a-b-c-|', check.expected);
          expectObservable(apply(erroring)).toBe('-a-#', check.expected, boom);
          expectSubscriptions(completing.subscriptions).toBe('^------!');
          expectSubscriptions(erroring.subscriptions).toBe('^--!');
        });
      });
      expect(stopped).toEqual([]);
    });

    for (const { callback, make, values = check.values } of check.throwing ?? []) {
      it(`errors with what ${callback} throws and unsubscribes the source`, () => {
        const thrown = new Error(`${callback} failed`);
        const fail = (): never => {
          throw thrown;
        };
        newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const source = cold(' -a-b-c-|', values);
          const sourceSubs = '  ^!';
          const expected = '    -#';

          expectObservable(source.pipe(make(fail))).toBe(expected, undefined, thrown);
          expectSubscriptions(source.subscriptions).toBe(sourceSubs);
        });
      });
    }
  });
}
