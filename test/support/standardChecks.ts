// The standard operator checks of RxJS's own specs, table-driven, for every operator of cleanturn (core operators
// and policies, provider adapters, the executor, renderers, ACP): basic behaviour, source error, empty, never,
// early unsubscribe, unsubscription chains, a synchronous source stopped at once, silence after the end, and
// callbacks that throw. Every check also checks the subscriptions of its source.
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

/** The letters of the sample diagrams, in the order their events arrive. */
const letters = ['a', 'b', 'c'] as const;

/** A letter of the sample diagrams. */
type Letter = (typeof letters)[number];

/** The events the letters `a`, `b` and `c` of a diagram stand for. */
export type Abc<T> = Record<Letter, T>;

/** What an operator emits for a sample event that it keeps to itself (held, or not its business). */
export const nothing: unique symbol = Symbol('nothing');

/** One operator under check: sample events a, b, c and what each becomes. */
export interface StandardCheck<I> {
  name: string;
  /** A fresh instance of the operator. */
  make: () => OperatorFunction<I, unknown>;
  /** Sample input events, meant to arrive in the order a, b, c. */
  values: Abc<I>;
  /** What the operator emits for each of them, in the same frame: one value, or {@link nothing}. */
  expected: Abc<unknown>;
  /** What the result errors with when the source errors with `error` after `a`; default `error` itself. */
  errorFor?: (error: unknown) => unknown;
  /** The error of the result when the source completes empty; default: the result completes. */
  emptyError?: unknown;
  /** Operators with user callbacks: each one made to throw. */
  throwing?: readonly ThrowingCallback<I>[];
}

/**
 * A user callback made to throw. By default it runs for the first event, `a` of `values`: the result errors in
 * that frame with what it threw, and the source is unsubscribed there. Callbacks that run later give the diagrams.
 */
export interface ThrowingCallback<I> {
  callback: string;
  make: (fail: () => never) => OperatorFunction<I, unknown>;
  /** The source's events; default the sample events. */
  values?: Record<string, I>;
  /** The source diagram (`#` errors with the sources' error); default `-a-b-c-|`. */
  source?: string;
  /** The result diagram (`#` is what the callback threw); default `-#`. */
  expected?: string;
  /** The values of `expected`; default what the sample events become. */
  expectedValues?: Record<string, unknown>;
  /** The source's subscription; default `^!`; `[]` when the callback throws before the source is subscribed. */
  sourceSubs?: string | string[];
  /** What the result errors with for what the callback threw; default what it threw, as it is. */
  errorFor?: (thrown: Error) => unknown;
}

/** Runs `body` and returns every notification that RxJS dropped because its subscriber had already stopped. */
export function stoppedNotifications(body: () => void): ObservableNotification<unknown>[] {
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

/** Registers the standard checks of one operator, in a `describe` named after it. */
export function standardChecks<I>(check: StandardCheck<I>): void {
  const apply = (source: Observable<I>) => source.pipe(check.make());
  const errorFor = check.errorFor ?? ((error: unknown) => error);
  /** The result diagram for a source diagram: each letter stays where the operator emits for it, in its frame. */
  const out = (diagram: string) =>
    diagram.replace(/[abc]/g, (letter) => (check.expected[letter as Letter] === nothing ? '-' : letter));

  describe(`${check.name}: standard checks`, () => {
    it('emits what the sample events become, frame for frame', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-b-c-|', check.values);
        const sourceSubs = '  ^------!';
        const expected = out('-a-b-c-|');

        expectObservable(apply(source)).toBe(expected, check.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('passes a source error through', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold(' -a-#', check.values, boom);
        const sourceSubs = '  ^--!';
        const expected = out('-a-#');

        expectObservable(apply(source)).toBe(expected, check.expected, errorFor(boom));
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it(check.emptyError === undefined ? 'completes on an empty source' : 'errors on an empty source', () => {
      newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold<I>(' |');
        const sourceSubs = '  (^!)';
        const expected = check.emptyError === undefined ? '|' : '#';

        expectObservable(apply(source)).toBe(expected, undefined, check.emptyError);
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
        const expected = out('-a-b');

        expectObservable(apply(source), unsub).toBe(expected, check.expected);
        expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      });
    });

    it('does not break unsubscription chains when the result is unsubscribed explicitly', () => {
      newScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
        const source = hot('  -a-b-c-|', check.values);
        const unsub = '       -----!';
        const sourceSubs = '  ^----!';
        const expected = out('-a-b-');

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
      // A synchronous source runs inside `subscribe`: only a subscriber that is already closed can stop it.
      const first = letters.findIndex((letter) => check.expected[letter] !== nothing);
      const wanted = first === -1 ? [] : [check.expected[letters[first] ?? 'a']];
      const produced: string[] = [];
      const source = new Observable<I>((subscriber) => {
        for (const letter of letters) {
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
      expect(received).toEqual(wanted);
      expect(produced).toEqual(first === -1 ? [...letters] : letters.slice(0, first + 1));
    });

    it('never emits after it completes or errors', () => {
      const stopped = stoppedNotifications(() => {
        newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const completing = cold(' -a-b-c-|', check.values);
          const completingSubs = '   ^------!';
          const erroring = cold('    -a-#', check.values, boom);
          const erroringSubs = '     ^--!';

          expectObservable(apply(completing)).toBe(out('-a-b-c-|'), check.expected);
          expectObservable(apply(erroring)).toBe(out('-a-#'), check.expected, errorFor(boom));
          expectSubscriptions(completing.subscriptions).toBe(completingSubs);
          expectSubscriptions(erroring.subscriptions).toBe(erroringSubs);
        });
      });
      expect(stopped).toEqual([]);
    });

    for (const callback of check.throwing ?? []) {
      it(`errors with what ${callback.callback} throws and unsubscribes the source`, () => {
        const thrown = new Error(`${callback.callback} failed`);
        const fail = (): never => {
          throw thrown;
        };
        newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
          const source = cold(callback.source ?? '-a-b-c-|', callback.values ?? check.values, boom);
          const expected = callback.expected ?? '-#';

          expectObservable(source.pipe(callback.make(fail))).toBe(
            expected,
            callback.expectedValues ?? check.expected,
            callback.errorFor?.(thrown) ?? thrown,
          );
          expectSubscriptions(source.subscriptions).toBe(callback.sourceSubs ?? '^!');
        });
      });
    }
  });
}
