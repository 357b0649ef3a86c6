// What the provider adapter tests share: tables of recorded fixtures checked through the adapter (to a clean turn),
// attempts replayed one per subscription, and the retrying pipeline from an adapter to the turn states.
import { readdirSync } from 'node:fs';
import {
  accumulateTurn,
  assembleToolCalls,
  attemptPipeline,
  cleanTurn,
  effectKey,
  type ProviderEvent,
  type TurnEvent,
  type TurnState,
  turnPipeline,
} from 'cleanturn';
import { ProviderError } from 'cleanturn/providers';
import { defer, from, type Observable, type OperatorFunction, pipe, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { collect } from './collect.js';

/** One fixture: what the adapter and assembleToolCalls make of it, and the clean turn it gives. */
export interface FixtureCase {
  file: string;
  /** The trap of the wire format it records. */
  trap: string;
  events: ProviderEvent[];
  /** Checks what the stream errors with, if it does. */
  error?: (error: unknown) => void;
  /** The clean turn's text and released call ids, for fixtures that finish cleanly. */
  turn?: { text: string; calls: string[] };
}

/** A provider's fixtures and how to read them. */
export interface FixtureTable<I> {
  cases: readonly FixtureCase[];
  /** The fixture files the cases must cover, one case each. */
  files: () => string[];
  /** The payloads of a fixture file, as the adapter reads them. */
  read: (file: string) => I[];
  adapter: () => OperatorFunction<I, ProviderEvent>;
  turnId: string;
}

/**
 * Registers a check that every fixture file has a case, and for each case: the neutral events it becomes (after
 * the adapter and assembleToolCalls) and how the stream ends, and for fixtures that finish cleanly the clean turn.
 */
export function fixtureChecks<I>({ cases, files, read, adapter, turnId }: FixtureTable<I>): void {
  it('covers every fixture file', () => {
    expect(cases.map((c) => c.file).sort()).toEqual(files().sort());
  });

  for (const c of cases) {
    describe(`${c.file}: ${c.trap}`, () => {
      it('becomes the right neutral events', () => {
        const result = collect(from(read(c.file)).pipe(adapter(), assembleToolCalls()));
        expect(result.values).toEqual(c.events);
        if (c.error === undefined) {
          expect(result.error).toBeUndefined();
          expect(result.completed).toBe(true);
        } else {
          expect(result.completed).toBe(false);
          c.error(result.error);
        }
      });

      if (c.turn !== undefined) {
        const expected = c.turn;
        it('gives a clean turn', () => {
          const states = collect(
            from(read(c.file)).pipe(attemptPipeline(adapter()), cleanTurn({ turnId }), accumulateTurn()),
          );
          expect(states.error).toBeUndefined();
          const turn = states.values.at(-1);
          expect(turn?.text).toBe(expected.text);
          expect(turn?.toolCalls.map((k) => k.id)).toEqual(expected.calls);
          for (const k of turn?.toolCalls ?? []) expect(k.effectKey).toBe(effectKey(turnId, k));
        });
      }
    });
  }
}

/** What a fixture must turn into after the adapter and assembleToolCalls, compared by {@link expectNeutralEvents}. */
export interface Expectation {
  events: ProviderEvent[];
  /** The fields of the error it ends with (a ProviderError unless `errorClass` says otherwise); otherwise it completes. */
  error?: { retryable: boolean; code: string | undefined; message: string } & Record<string, unknown>;
  /** The class of that error, when it is not a ProviderError (a ProviderError payload for a payload it cannot read). */
  errorClass?: new (
    ...args: never[]
  ) => Error;
}

/** A provider's fixtures keyed by file name, and how to read them. */
export interface ExpectationTable<I> {
  /** The provider name of the adapter's errors. */
  provider: string;
  /** The folder of the fixtures: every `.sse` file in it must have an expectation. */
  dir: string;
  expectations: Record<string, Expectation>;
  /** The payloads of a fixture file, as the adapter reads them. */
  read: (file: string) => I[];
  adapter: () => OperatorFunction<I, ProviderEvent>;
}

/**
 * Compares assembled events with the expected ones: the calls in order, everything else in order, and no call after
 * the finish. Where a call falls among the other events is `assembleToolCalls`'s business (a call is emitted once it
 * is complete, at the latest right before the finish), not the adapter's.
 */
export function expectNeutralEvents(
  actual: readonly ProviderEvent[],
  expected: readonly ProviderEvent[],
): void {
  const isCall = (event: ProviderEvent) => event.type === 'tool-call';
  expect(actual.filter((e) => !isCall(e))).toEqual(expected.filter((e) => !isCall(e)));
  expect(actual.filter(isCall)).toEqual(expected.filter(isCall));
  const finishAt = actual.findIndex((event) => event.type === 'finish');
  if (finishAt >= 0) expect(actual.slice(finishAt).some(isCall)).toBe(false);
}

/**
 * Registers a check that the fixture files and the expectations match one to one, and a test per fixture: the
 * neutral events it becomes after the adapter and assembleToolCalls, and how the stream ends.
 */
export function expectationChecks<I>({
  provider,
  dir,
  expectations,
  read,
  adapter,
}: ExpectationTable<I>): void {
  it('has an expectation for each fixture file, and a fixture for each expectation', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.sse'));
    expect(files.sort()).toEqual(Object.keys(expectations).sort());
  });

  for (const [name, expected] of Object.entries(expectations)) {
    it(`${name} → ${expected.error === undefined ? 'a clean finish' : 'a typed error'}`, () => {
      const result = collect(from(read(name)).pipe(adapter(), assembleToolCalls()));
      expectNeutralEvents(result.values, expected.events);
      if (expected.error === undefined) {
        expect(result.error).toBeUndefined();
        expect(result.completed).toBe(true);
      } else if (expected.errorClass === undefined) {
        expect(result.error).toBeInstanceOf(ProviderError);
        expect(result.error).toMatchObject({ provider, ...expected.error });
      } else {
        expect(result.error).toBeInstanceOf(expected.errorClass);
        expect(result.error).toMatchObject(expected.error);
      }
    });
  }
}

/** A source whose n-th subscription replays the payloads of the n-th attempt (the last one again after that). */
export function attempts<I>(...payloads: readonly (readonly I[])[]): Observable<I> {
  let n = 0;
  return defer(() => from(payloads[Math.min(n++, payloads.length - 1)] ?? []));
}

/**
 * The retrying pipeline from an adapter to the turn states: attemptPipeline (the adapter, assembleToolCalls,
 * requireFinish), turnPipeline (retryAsEvents, twice at the most and without delay, then cleanTurn),
 * accumulateTurn. `seen` receives every event of the clean turn.
 */
export function retriedTurn<I>(
  adapter: OperatorFunction<I, ProviderEvent>,
  turnId: string,
  seen: TurnEvent[] = [],
): OperatorFunction<I, TurnState> {
  return pipe(
    attemptPipeline(adapter),
    turnPipeline({ turnId, retry: 2 }),
    tap((event) => seen.push(event)),
    accumulateTurn(),
  );
}
