import { defer, type Observable, type OperatorFunction } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';

/**
 * One marble case: a source diagram, an operator and the diagram it must produce.
 *
 * Diagrams use dashes for time (one frame each) and no spaces or time literals inside a line, so that the
 * same text can be drawn as a picture.
 *
 * @inline
 */
export interface MarbleCase {
  /** What the case shows, in one sentence. */
  title: string;
  /** The source diagram (cold). A list gives one diagram per subscription: a retried source. */
  source: string | readonly string[];
  /** The events the letters of `source` stand for. */
  values?: Readonly<Record<string, unknown>>;
  /** The error `#` stands for in `source`. */
  error?: unknown;
  /** The operator as the picture labels it, e.g. `tagAttempts()`. */
  label: string;
  /** Makes the operator under test; called once per run. */
  operator: () => OperatorFunction<never, unknown>;
  /** The result diagram. */
  expected: string;
  /** The events the letters of `expected` stand for. */
  expectedValues?: Readonly<Record<string, unknown>>;
  /** The error `#` stands for in `expected`. */
  expectedError?: unknown;
  /** Where the consumer unsubscribes (a `!` on a dash line). */
  unsubscribe?: string;
  /** The expected subscriptions of the source: one marble per diagram of `source`. */
  subscriptions?: string | readonly string[];
}

/**
 * The marble cases of one operator or policy: what {@link defineMarbles} takes and returns (write
 * `ReturnType<typeof defineMarbles>` for the type).
 *
 * @inline
 */
export interface MarbleSpec {
  /** The operator's or policy's name. */
  name: string;
  /** A line of prose that introduces the diagrams. */
  summary: string;
  cases: readonly MarbleCase[];
}

/** Declares a marble spec (an identity function that checks the shape). */
export function defineMarbles(spec: MarbleSpec): MarbleSpec {
  return spec;
}

/**
 * Runs one marble case with RxJS `TestScheduler`, comparing with the assertion of your test framework.
 *
 * ## Example
 * ```ts
 * import { expect, it } from 'vitest';
 * import { runMarbleCase } from 'cleanturn/testing';
 *
 * for (const c of spec.cases) it(c.title, () => runMarbleCase(c, (a, e) => expect(a).toEqual(e)));
 * ```
 *
 * @param marbleCase The case.
 * @param assertDeepEqual Your framework's deep equality assertion.
 */
export function runMarbleCase(
  marbleCase: MarbleCase,
  assertDeepEqual: (actual: unknown, expected: unknown) => void,
): void {
  const scheduler = new TestScheduler(assertDeepEqual);
  scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
    const diagrams = typeof marbleCase.source === 'string' ? [marbleCase.source] : marbleCase.source;
    const sources = diagrams.map((diagram) =>
      cold(diagram, marbleCase.values as Record<string, unknown>, marbleCase.error),
    );
    let next = 0;
    const source: Observable<unknown> =
      sources.length === 1
        ? (sources[0] as Observable<unknown>)
        : defer(() => sources[Math.min(next++, sources.length - 1)] as Observable<unknown>);
    const result = (source as Observable<never>).pipe(marbleCase.operator());
    expectObservable(result, marbleCase.unsubscribe).toBe(
      marbleCase.expected,
      marbleCase.expectedValues as Record<string, unknown>,
      marbleCase.expectedError,
    );
    if (marbleCase.subscriptions !== undefined) {
      const subs =
        typeof marbleCase.subscriptions === 'string' ? [marbleCase.subscriptions] : marbleCase.subscriptions;
      sources.forEach((cold, i) => {
        expectSubscriptions(cold.subscriptions).toBe(subs[i] ?? []);
      });
    }
  });
}
