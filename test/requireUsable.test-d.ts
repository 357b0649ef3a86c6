// Type tests of requireUsable: it keeps the event type, reads whole calls only, and its options and error are typed.
import type { Attempted, ProviderEvent } from 'cleanturn';
import { type CleanturnError, requireFinish, requireUsable, retryAsEvents, type TurnError } from 'cleanturn';
import type { StreamTurnOptions } from 'cleanturn/transport';
import type { Observable } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import type { UnusableCode } from '../src/errors.js';
import type {
  FinishedAttempt,
  RequireUsableOptions,
  UnusableVerdict,
  UsableCheck,
} from '../src/requireUsable.js';
import type { ToolCallEvent } from '../src/types.js';

declare const provider$: Observable<ProviderEvent>;
declare const whole$: Observable<AssembledEvent<ProviderEvent>>;
declare const attemptedWhole$: Observable<AssembledEvent<Attempted<ProviderEvent>>>;

describe('requireUsable', () => {
  test('keeps the type of whole calls, tagged or not', () => {
    expectTypeOf(whole$.pipe(requireUsable())).toEqualTypeOf<Observable<AssembledEvent<ProviderEvent>>>();
    expectTypeOf(attemptedWhole$.pipe(requireUsable({ empty: false }))).toEqualTypeOf<
      Observable<AssembledEvent<Attempted<ProviderEvent>>>
    >();
    expectTypeOf(whole$.pipe(requireFinish(), requireUsable(), retryAsEvents({ count: 2 }))).toEqualTypeOf<
      Observable<AssembledEvent<ProviderEvent> | import('../src/types.js').RetryEvent>
    >();
  });

  test('does not take call fragments: assembleToolCalls() must come first', () => {
    // @ts-expect-error the source still has tool-call-delta fragments
    provider$.pipe(requireUsable());
  });

  test('its options: booleans for the ready-made checks, a validator of calls, checks of your own', () => {
    expectTypeOf<RequireUsableOptions['validateArgs']>().toEqualTypeOf<
      ((call: ToolCallEvent) => string | undefined) | undefined
    >();
    expectTypeOf<UsableCheck>().parameter(0).toEqualTypeOf<FinishedAttempt>();
    expectTypeOf<ReturnType<UsableCheck>>().toEqualTypeOf<UnusableVerdict | undefined>();
    requireUsable({
      checks: [({ text }) => (text === '' ? { code: 'mine', reason: 'no text' } : undefined)],
    });
    // @ts-expect-error a validator returns a problem's text, not a boolean
    requireUsable({ validateArgs: () => true });
    // @ts-expect-error the ready-made checks are switched with booleans
    requireUsable({ refusal: 'yes' });
  });

  test('its error is a CleanturnError with a code', () => {
    expectTypeOf<TurnError>().toExtend<CleanturnError>();
    expectTypeOf<TurnError['check']>().toEqualTypeOf<UnusableCode | undefined>();
    expectTypeOf<TurnError['attempt']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<'refusal'>().toExtend<UnusableCode>();
    expectTypeOf<'my-own'>().toExtend<UnusableCode>();
  });

  test('streamTurn takes the same options', () => {
    expectTypeOf<StreamTurnOptions['usable']>().toEqualTypeOf<RequireUsableOptions | boolean | undefined>();
  });
});
