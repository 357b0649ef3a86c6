// Types of injectTurn: what its signals hold, and which turns it takes (streamTurn's, the core pipelines', merged
// with the executor's results), and which it refuses (raw provider events, which carry no attempt and no reset).
import type { Injector, Signal } from '@angular/core';
import {
  assembleToolCalls,
  attemptPipeline,
  cleanTurn,
  type ProviderEvent,
  type TurnEvent,
  turnPipeline,
} from 'cleanturn';
import { injectTurn, type TurnSignals } from 'cleanturn/angular';
import type { ToolResultEvent } from 'cleanturn/effects';
import { openaiChat } from 'cleanturn/providers';
import type { TurnView } from 'cleanturn/renderers';
import { streamTurn } from 'cleanturn/transport';
import { merge, type Observable } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { InjectTurnOptions, TurnStatus } from '../../src/angular/injectTurn.js';
import type { ToolCallView } from '../../src/renderers/reduceView.js';

declare const providerEvents$: Observable<ProviderEvent>;
declare const chunks$: Observable<unknown>;
declare const results$: Observable<ToolResultEvent>;
declare const injector: Injector;

describe('injectTurn', () => {
  test('returns read-only signals of the view and the two controls', () => {
    const turn = injectTurn(() =>
      providerEvents$.pipe(assembleToolCalls(), cleanTurn({ turnId: 'turn-42' })),
    );
    expectTypeOf(turn).toEqualTypeOf<TurnSignals>();
    expectTypeOf(turn.view).toEqualTypeOf<Signal<TurnView>>();
    expectTypeOf(turn.text).toEqualTypeOf<Signal<string>>();
    expectTypeOf(turn.reasoning).toEqualTypeOf<Signal<string>>();
    expectTypeOf(turn.calls).toEqualTypeOf<Signal<readonly ToolCallView[]>>();
    expectTypeOf(turn.status).toEqualTypeOf<Signal<TurnStatus>>();
    expectTypeOf<TurnStatus>().toEqualTypeOf<
      'idle' | 'streaming' | 'retrying' | 'done' | 'error' | 'stopped'
    >();
    expectTypeOf(turn.retryDelay).toEqualTypeOf<Signal<number | undefined>>();
    expectTypeOf(turn.retryAt).toEqualTypeOf<Signal<number | undefined>>();
    expectTypeOf(turn.attempt).toEqualTypeOf<Signal<number>>();
    expectTypeOf(turn.error).toEqualTypeOf<Signal<unknown>>();
    expectTypeOf(turn.stop).toEqualTypeOf<() => void>();
    expectTypeOf(turn.reload).toEqualTypeOf<() => void>();
    // Signals, not writable ones: nothing outside sets them.
    expectTypeOf(turn.text).not.toHaveProperty('set');
  });

  test("takes streamTurn's turn, the core pipelines' and either merged with the executor's results", () => {
    const streamed = streamTurn({
      turnId: 'turn-42',
      request: ({ signal }) => new Request('/api/chat/completions', { method: 'POST', signal }),
      adapter: openaiChat(),
    });
    expectTypeOf(streamed).toEqualTypeOf<Observable<TurnEvent>>();
    injectTurn(() => streamed);
    injectTurn(() => chunks$.pipe(attemptPipeline(openaiChat()), turnPipeline({ turnId: 'turn-42' })));
    injectTurn(() => merge(streamed, results$));
  });

  test('refuses raw provider events (no attempt, retries not yet resets) and a source that is not a function', () => {
    // @ts-expect-error provider events are not the clean turn: run them through cleanTurn or turnPipeline
    injectTurn(() => providerEvents$);
    // @ts-expect-error the source is a function that makes the Observable, called again on reload()
    injectTurn(providerEvents$.pipe(assembleToolCalls(), cleanTurn({ turnId: 'turn-42' })));
  });

  test('options', () => {
    const turn$ = () => providerEvents$.pipe(assembleToolCalls(), cleanTurn({ turnId: 'turn-42' }));
    injectTurn(turn$, { injector, start: false, cadence: 'frame', onReset: 'mark' });
    injectTurn(turn$, { cadence: 50 });
    injectTurn(turn$, { cadence: 'sync' });
    expectTypeOf<InjectTurnOptions['cadence']>().toEqualTypeOf<'frame' | 'sync' | number | undefined>();
    // @ts-expect-error a cadence is 'frame', 'sync' or milliseconds
    injectTurn(turn$, { cadence: 'fast' });
    // @ts-expect-error onReset is 'rollback' or 'mark'
    injectTurn(turn$, { onReset: 'hide' });
    // @ts-expect-error not an option
    injectTurn(turn$, { cadance: 'frame' });
  });
});
