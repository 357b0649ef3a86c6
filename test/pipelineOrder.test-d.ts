// Type tests: the pipeline's order is in the types. Fragments never reach what reads whole calls, the two halves
// compose, and a policy written by hand from the pieces needs no type arguments.
import type { KeyedToolCall, ProviderEvent, TurnEvent } from 'cleanturn';
import {
  assembleToolCalls,
  attemptPipeline,
  bufferUntilFinish,
  cleanTurn,
  dedupeByEffectKey,
  requireFinish,
  resetOnRetry,
  retryAsEvents,
  tagAttempts,
  turnPipeline,
} from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { type Observable, type OperatorFunction, pipe } from 'rxjs';
import { describe, expectTypeOf, it } from 'vitest';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import type { OpenAIChatInput } from '../src/providers/openaiChat.js';
import type { RepeatedToolCall } from '../src/types.js';

declare const fragments$: Observable<ProviderEvent>;
declare const whole$: Observable<AssembledEvent<ProviderEvent>>;
declare const chunks$: Observable<OpenAIChatInput>;
const turnId = 'turn-42';

describe('fragments never reach what reads whole calls', () => {
  it('cleanTurn does not compile on a source of fragments', () => {
    // @ts-expect-error assembleToolCalls() must come before cleanTurn()
    fragments$.pipe(cleanTurn({ turnId }));
    // @ts-expect-error the same behind retryAsEvents
    fragments$.pipe(retryAsEvents({ count: 2 }), cleanTurn({ turnId }));
    expectTypeOf(fragments$.pipe(assembleToolCalls(), cleanTurn({ turnId }))).toEqualTypeOf<
      Observable<TurnEvent>
    >();
    expectTypeOf(whole$.pipe(cleanTurn({ turnId }))).toEqualTypeOf<Observable<TurnEvent>>();
  });

  it('requireFinish does not compile on a source of fragments', () => {
    // @ts-expect-error assembleToolCalls() must come before requireFinish()
    fragments$.pipe(requireFinish());
    // @ts-expect-error an adapter emits fragments: assembleToolCalls() goes between
    chunks$.pipe(openaiChat(), requireFinish());
    expectTypeOf(chunks$.pipe(openaiChat(), assembleToolCalls(), requireFinish())).toEqualTypeOf<
      Observable<AssembledEvent<ProviderEvent>>
    >();
    // Any other event type passes through as it is.
    const other$ = {} as Observable<{ type: 'finish' | 'text'; n: number }>;
    expectTypeOf(other$.pipe(requireFinish())).toEqualTypeOf<
      Observable<{ type: 'finish' | 'text'; n: number }>
    >();
  });
});

describe('the two halves', () => {
  it('attemptPipeline then turnPipeline make the clean turn', () => {
    const turn$ = chunks$.pipe(attemptPipeline(openaiChat()), turnPipeline({ turnId, retry: 2 }));
    expectTypeOf(turn$).toEqualTypeOf<Observable<TurnEvent>>();
    expectTypeOf(fragments$.pipe(attemptPipeline(), turnPipeline({ turnId }))).toEqualTypeOf<
      Observable<TurnEvent>
    >();
  });

  it('turnPipeline does not compile on fragments', () => {
    // @ts-expect-error the per-attempt half comes first
    fragments$.pipe(turnPipeline({ turnId }));
  });
});

describe('a policy written by hand from the pieces', () => {
  it('type-checks as OperatorFunction<ProviderEvent, TurnEvent> without type arguments', () => {
    const early = (call: { name: string }) => call.name === 'lookup_order';
    const policy: OperatorFunction<ProviderEvent, TurnEvent> = pipe(
      tagAttempts(),
      resetOnRetry(),
      bufferUntilFinish({ early }),
      dedupeByEffectKey({ turnId }),
    );
    const inline: OperatorFunction<ProviderEvent, TurnEvent> = pipe(
      tagAttempts(),
      resetOnRetry(),
      bufferUntilFinish({ early: (call) => call.name === 'lookup_order' }),
      dedupeByEffectKey({ turnId }),
    );
    expectTypeOf(fragments$.pipe(policy)).toEqualTypeOf<Observable<TurnEvent>>();
    expectTypeOf(fragments$.pipe(inline)).toEqualTypeOf<Observable<TurnEvent>>();
  });

  it('a call whose key already ran is a type of its own, with the fields of a keyed call', () => {
    expectTypeOf<Extract<TurnEvent, { type: 'tool-call-repeat' }>>().toEqualTypeOf<RepeatedToolCall>();
    expectTypeOf<Omit<RepeatedToolCall, 'type'>>().toEqualTypeOf<Omit<KeyedToolCall, 'type'>>();
    expectTypeOf<Extract<TurnEvent, { type: 'tool-call' }>>().toEqualTypeOf<KeyedToolCall>();
  });
});

describe('the pieces in their order, without the halves', () => {
  it('assembleToolCalls → requireFinish → cleanTurn compiles, with or without retries between', () => {
    expectTypeOf(fragments$.pipe(assembleToolCalls(), requireFinish(), cleanTurn({ turnId }))).toEqualTypeOf<
      Observable<TurnEvent>
    >();
    expectTypeOf(
      fragments$.pipe(assembleToolCalls(), requireFinish(), retryAsEvents(2), cleanTurn({ turnId })),
    ).toEqualTypeOf<Observable<TurnEvent>>();
  });
});
