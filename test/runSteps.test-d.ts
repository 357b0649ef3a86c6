import { type ProviderEvent, type RunEvent, runSteps, type TurnEvent, type TurnState } from 'cleanturn';
import { type Observable, of } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { NextStep } from '../src/nextStep.js';
import type { RunEnd, StepOutcome } from '../src/runSteps.js';

declare const turn$: Observable<TurnEvent>;
declare const provider$: Observable<ProviderEvent>;

describe('runSteps', () => {
  test('emits run events: each with its step, narrowed by type', () => {
    const run = runSteps({ runId: 'run-7', turn: () => turn$ });
    expectTypeOf(run).toEqualTypeOf<Observable<RunEvent>>();
    run.subscribe((event) => {
      expectTypeOf(event.step).toEqualTypeOf<number>();
      if (event.type === 'text') expectTypeOf(event.text).toEqualTypeOf<string>();
      if (event.type === 'tool-call') expectTypeOf(event.effectKey).toEqualTypeOf<string>();
      if (event.type === 'step-end') {
        expectTypeOf(event.end).toEqualTypeOf<RunEnd | undefined>();
        expectTypeOf(event.next).toEqualTypeOf<NextStep>();
        expectTypeOf(event.turn).toEqualTypeOf<TurnState | undefined>();
      }
    });
  });

  test('the context says the step and the outcome of the one before', () => {
    runSteps({
      runId: 'run-7',
      turn: ({ step, previous, runId }) => {
        expectTypeOf(step).toEqualTypeOf<number>();
        expectTypeOf(runId).toEqualTypeOf<string>();
        expectTypeOf(previous).toEqualTypeOf<StepOutcome | undefined>();
        return turn$;
      },
      until: (outcome) => outcome.step > 3,
    });
  });

  test('a step is a clean turn, not raw provider events; until answers with a boolean', () => {
    // @ts-expect-error: provider events have no attempts, effect keys or resets: pipe them through cleanTurn first
    runSteps({ runId: 'run-7', turn: () => provider$ });
    // @ts-expect-error: until must answer with a boolean
    runSteps({ runId: 'run-7', turn: () => of<TurnEvent>(), until: () => 'yes' });
  });
});
