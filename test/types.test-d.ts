// Type tests: what each operator does to the event union, checked by the compiler (vitest typecheck).
import type {
  Attempted,
  KeyedToolCall,
  ProviderEvent,
  ResetEvent,
  RetryBudget,
  TurnEvent,
  TurnState,
} from 'cleanturn';
import {
  accumulateTurn,
  assembleToolCalls,
  bufferUntilFinish,
  cleanTurn,
  dedupeByEffectKey,
  effectKey,
  lateExecutionPolicy,
  naivePolicy,
  nextStep,
  requireFinish,
  resetOnlyPolicy,
  resetOnRetry,
  retryAsEvents,
  retryBudget,
  type TurnError,
  tagAttempts,
  turnPipeline,
} from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import { text } from 'cleanturn/testing';
import { streamTurn } from 'cleanturn/transport';
import { type MonoTypeOperatorFunction, type Observable, type OperatorFunction, of } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { AssembledEvent } from '../src/assembleToolCalls.js';
import type { WithEffectKeys } from '../src/dedupeByEffectKey.js';
import type { FailedAttempt } from '../src/errors.js';
import type { NextStep } from '../src/nextStep.js';
import type { WithResets } from '../src/resetOnRetry.js';
import type { RetryBudgetOptions, RetryBudgetState } from '../src/retryBudget.js';
import type {
  FinishEvent,
  PolicyEvent,
  ProviderOutput,
  ReasoningEvent,
  RepeatedToolCall,
  RetryEvent,
  TextEvent,
  ToolCallDeltaEvent,
  ToolCallEvent,
  UsageEvent,
} from '../src/types.js';

declare const provider$: Observable<ProviderEvent>;
declare const attempted$: Observable<Attempted<ProviderEvent>>;
declare const turn$: Observable<TurnEvent>;
declare const whole$: Observable<AssembledEvent<ProviderEvent>>;
declare const attemptedWhole$: Observable<AssembledEvent<Attempted<ProviderEvent>>>;

/** The value type of an observable. */
type ValueOf<O> = O extends Observable<infer T> ? T : never;

describe('the event model', () => {
  test('Attempted<E> adds attempt: number to every member of a union', () => {
    expectTypeOf<Attempted<TextEvent>>().toEqualTypeOf<TextEvent & { attempt: number }>();
    expectTypeOf<Attempted<ProviderEvent>>().toHaveProperty('attempt').toEqualTypeOf<number>();
    expectTypeOf<Extract<Attempted<ProviderEvent>, { type: 'retry' }>>().toEqualTypeOf<
      Attempted<RetryEvent>
    >();
  });

  test('PolicyEvent has no retry, and has resets', () => {
    expectTypeOf<Extract<PolicyEvent, { type: 'retry' }>>().toBeNever();
    expectTypeOf<Extract<PolicyEvent, { type: 'reset' }>>().toEqualTypeOf<ResetEvent>();
  });

  test('a tool-call of TurnEvent is a KeyedToolCall', () => {
    expectTypeOf<Extract<TurnEvent, { type: 'tool-call' }>>().toEqualTypeOf<KeyedToolCall>();
    expectTypeOf<KeyedToolCall>().toHaveProperty('effectKey').toEqualTypeOf<string>();
    expectTypeOf<KeyedToolCall>().toHaveProperty('attempt').toEqualTypeOf<number>();
    expectTypeOf<Extract<TurnEvent, { type: 'retry' }>>().toBeNever();
  });
});

describe('tagAttempts', () => {
  test('outputs Attempted<E> for the input type', () => {
    expectTypeOf(tagAttempts<ProviderEvent>()).toEqualTypeOf<
      OperatorFunction<ProviderEvent, Attempted<ProviderEvent>>
    >();
    expectTypeOf(provider$.pipe(tagAttempts())).toEqualTypeOf<Observable<Attempted<ProviderEvent>>>();
    // Any event type works, and keeps its own fields.
    const custom$ = of({ type: 'text' as const, text: 'hi', lang: 'en' }).pipe(tagAttempts());
    expectTypeOf<ValueOf<typeof custom$>>().toEqualTypeOf<
      Attempted<{ type: 'text'; text: string; lang: string }>
    >();
  });

  test('rejects values that are not events', () => {
    // @ts-expect-error numbers have no `type`
    of(1, 2).pipe(tagAttempts());
  });
});

describe('resetOnRetry', () => {
  test('removes retry from the union and adds ResetEvent', () => {
    const out$ = attempted$.pipe(resetOnRetry());
    type Out = ValueOf<typeof out$>;
    expectTypeOf<Out>().toEqualTypeOf<WithResets<Attempted<ProviderEvent>>>();
    expectTypeOf<Out>().toEqualTypeOf<Attempted<Exclude<ProviderEvent, RetryEvent>> | ResetEvent>();
    expectTypeOf<Extract<Out, { type: 'retry' }>>().toBeNever();
    expectTypeOf<Extract<Out, { type: 'reset' }>>().toEqualTypeOf<ResetEvent>();
    expectTypeOf<Extract<Out, { type: 'text' }>>().toEqualTypeOf<Attempted<TextEvent>>();
  });

  test('needs events with an attempt (tagAttempts first)', () => {
    // @ts-expect-error ProviderEvent has no `attempt`
    provider$.pipe(resetOnRetry());
    // @ts-expect-error a bare text event has no `attempt`
    of(text('x')).pipe(resetOnRetry());
    expectTypeOf(provider$.pipe(tagAttempts(), resetOnRetry())).toEqualTypeOf<
      Observable<WithResets<Attempted<ProviderEvent>>>
    >();
  });
});

describe('bufferUntilFinish', () => {
  test('keeps the type', () => {
    expectTypeOf(bufferUntilFinish<Attempted<ProviderEvent>>()).toEqualTypeOf<
      MonoTypeOperatorFunction<Attempted<ProviderEvent>>
    >();
    expectTypeOf(attempted$.pipe(bufferUntilFinish())).toEqualTypeOf<Observable<Attempted<ProviderEvent>>>();
    const policy$ = attempted$.pipe(resetOnRetry(), bufferUntilFinish());
    expectTypeOf(policy$).toEqualTypeOf<Observable<WithResets<Attempted<ProviderEvent>>>>();
  });

  test('its early callback receives the tool-call member', () => {
    attempted$.pipe(
      bufferUntilFinish({
        early: (call) => {
          expectTypeOf(call).toEqualTypeOf<Attempted<ToolCallEvent>>();
          return call.name === 'lookup_order';
        },
      }),
    );
    bufferUntilFinish<Attempted<ProviderEvent>>({
      early: (call) => {
        expectTypeOf(call).toEqualTypeOf<Attempted<ToolCallEvent>>();
        expectTypeOf(call.attempt).toBeNumber();
        return true;
      },
    });
    // A named predicate (not contextually typed) still leaves the event type to the source.
    const isPureRead = (call: { name: string }): boolean => call.name === 'lookup_order';
    expectTypeOf(attempted$.pipe(bufferUntilFinish({ early: isPureRead }))).toEqualTypeOf<
      Observable<Attempted<ProviderEvent>>
    >();
    // A predicate that returns something else is refused.
    // @ts-expect-error early must return a boolean
    bufferUntilFinish<Attempted<ProviderEvent>>({ early: (call) => call.name });
  });

  test('needs events with an attempt', () => {
    // @ts-expect-error ProviderEvent has no `attempt`
    provider$.pipe(bufferUntilFinish());
  });
});

describe('dedupeByEffectKey', () => {
  test('adds effectKey: string to tool calls only', () => {
    const out$ = attempted$.pipe(dedupeByEffectKey({ turnId: 't' }));
    type Out = ValueOf<typeof out$>;
    expectTypeOf<Out>().toEqualTypeOf<WithEffectKeys<Attempted<ProviderEvent>>>();
    expectTypeOf<Extract<Out, { type: 'tool-call' }>>().toEqualTypeOf<KeyedToolCall>();
    expectTypeOf<Extract<Out, { type: 'tool-call' }>>().toHaveProperty('effectKey').toEqualTypeOf<string>();
    expectTypeOf<Extract<Out, { type: 'text' }>>().toEqualTypeOf<Attempted<TextEvent>>();
    expectTypeOf<Extract<Out, { type: 'text' }>>().not.toHaveProperty('effectKey');
    expectTypeOf<Extract<Out, { type: 'finish' }>>().not.toHaveProperty('effectKey');
    // It also works before tagAttempts.
    expectTypeOf<ValueOf<ReturnType<ReturnType<typeof dedupeByEffectKey<ProviderEvent>>>>>().toEqualTypeOf<
      WithEffectKeys<ProviderEvent>
    >();
    expectTypeOf<Extract<WithEffectKeys<ProviderEvent>, { type: 'tool-call' }>>().toEqualTypeOf<
      ToolCallEvent & { effectKey: string }
    >();
  });

  test('options: turnId is required; seen is anything with has(key); key is a function', () => {
    dedupeByEffectKey({ turnId: 't', seen: new Set<string>() });
    dedupeByEffectKey({ turnId: 't', seen: { has: (key: string) => key === 'x' } });
    dedupeByEffectKey({ turnId: 't', key: (turnId, call) => `${turnId}:${call.name}` });
    // @ts-expect-error turnId is required
    dedupeByEffectKey({});
    // @ts-expect-error turnId is a string
    dedupeByEffectKey({ turnId: 42 });
    // @ts-expect-error seen must be able to answer has(key)
    dedupeByEffectKey({ turnId: 't', seen: ['a'] });
  });
});

describe('cleanTurn', () => {
  test('maps provider events with whole calls to TurnEvent', () => {
    expectTypeOf(whole$.pipe(cleanTurn({ turnId: 't' }))).toEqualTypeOf<Observable<TurnEvent>>();
    // Fragments do not compile: assembleToolCalls() comes first (see pipelineOrder.test-d.ts).
    // @ts-expect-error
    provider$.pipe(cleanTurn({ turnId: 't' }));
  });

  test('a tool-call of the result narrows to KeyedToolCall', () => {
    whole$.pipe(cleanTurn({ turnId: 't' })).subscribe((event) => {
      if (event.type === 'tool-call') {
        expectTypeOf(event).toEqualTypeOf<KeyedToolCall>();
        expectTypeOf(event.effectKey).toBeString();
      }
      if (event.type === 'reset') expectTypeOf(event).toEqualTypeOf<ResetEvent>();
      if (event.type === 'text') {
        expectTypeOf(event).toEqualTypeOf<Attempted<TextEvent>>();
        // @ts-expect-error only tool calls carry an effect key
        event.effectKey;
      }
    });
  });

  test('early receives an attempted tool call; options are checked', () => {
    cleanTurn({
      turnId: 't',
      early: (call) => {
        expectTypeOf(call).toEqualTypeOf<Attempted<ToolCallEvent>>();
        return call.name === 'lookup_order';
      },
    });
    // @ts-expect-error turnId is required
    cleanTurn({});
    // @ts-expect-error cleanTurn reads provider events, not numbers
    of(1).pipe(cleanTurn({ turnId: 't' }));
  });
});

describe('assembleToolCalls', () => {
  test('replaces the delta member with a tool call', () => {
    const out$ = provider$.pipe(assembleToolCalls());
    type Out = ValueOf<typeof out$>;
    expectTypeOf<Out>().toEqualTypeOf<AssembledEvent<ProviderEvent>>();
    expectTypeOf<Extract<Out, { type: 'tool-call-delta' }>>().toBeNever();
    expectTypeOf<Extract<Out, { type: 'tool-call' }>>().toExtend<ToolCallEvent>();
    expectTypeOf<Extract<Out, { type: 'text' }>>().toEqualTypeOf<TextEvent>();
    // What a delta becomes: exactly a tool call.
    expectTypeOf<AssembledEvent<ToolCallDeltaEvent>>().branded.toEqualTypeOf<ToolCallEvent>();
    // So the result feeds cleanTurn.
    expectTypeOf(provider$.pipe(assembleToolCalls(), cleanTurn({ turnId: 't' }))).toEqualTypeOf<
      Observable<TurnEvent>
    >();
  });

  test('keeps attempt when present', () => {
    const out$ = attempted$.pipe(assembleToolCalls());
    type Out = ValueOf<typeof out$>;
    expectTypeOf<Extract<Out, { type: 'tool-call-delta' }>>().toBeNever();
    expectTypeOf<Extract<Out, { type: 'tool-call' }>>().toHaveProperty('attempt').toEqualTypeOf<number>();
    expectTypeOf<Extract<Out, { type: 'tool-call' }>>().toExtend<Attempted<ToolCallEvent>>();
    expectTypeOf<AssembledEvent<Attempted<ToolCallDeltaEvent>>>().branded.toEqualTypeOf<
      Attempted<ToolCallEvent>
    >();
    // A delta keeps none of its fragment fields.
    expectTypeOf<AssembledEvent<Attempted<ToolCallDeltaEvent>>>().not.toHaveProperty('argsDelta');
    expectTypeOf<AssembledEvent<Attempted<ToolCallDeltaEvent>>>().not.toHaveProperty('index');
  });
});

describe('accumulateTurn', () => {
  test('yields TurnState whose toolCalls are the input’s tool-call and tool-call-repeat members', () => {
    expectTypeOf(turn$.pipe(accumulateTurn())).toEqualTypeOf<
      Observable<TurnState<KeyedToolCall | RepeatedToolCall>>
    >();
    const state$ = whole$.pipe(cleanTurn({ turnId: 't' }), accumulateTurn());
    type State = ValueOf<typeof state$>;
    expectTypeOf<State['toolCalls']>().toEqualTypeOf<readonly (KeyedToolCall | RepeatedToolCall)[]>();
    expectTypeOf<State['text']>().toBeString();
    expectTypeOf<State['attempt']>().toBeNumber();
    expectTypeOf<State['finish']>().toEqualTypeOf<Attempted<FinishEvent> | undefined>();
    // Without effect keys, the calls are plain attempted calls.
    const policy$ = provider$.pipe(lateExecutionPolicy(), accumulateTurn());
    expectTypeOf<ValueOf<typeof policy$>['toolCalls']>().toEqualTypeOf<readonly Attempted<ToolCallEvent>[]>();
  });

  test('needs events with an attempt', () => {
    // @ts-expect-error ProviderEvent has no `attempt`
    provider$.pipe(accumulateTurn());
  });
});

describe('retryAsEvents', () => {
  test('yields T | RetryEvent', () => {
    expectTypeOf(retryAsEvents<number>()).toEqualTypeOf<OperatorFunction<number, number | RetryEvent>>();
    expectTypeOf(of(1, 2).pipe(retryAsEvents({ count: 2 }))).toEqualTypeOf<Observable<number | RetryEvent>>();
    expectTypeOf(provider$.pipe(retryAsEvents({ count: 3 }))).toEqualTypeOf<Observable<ProviderEvent>>();
    // The event type comes from the source, not from what follows: cleanTurn can follow it directly.
    expectTypeOf(
      whole$.pipe(requireFinish(), retryAsEvents({ count: 3 }), cleanTurn({ turnId: 't' })),
    ).toEqualTypeOf<Observable<TurnEvent>>();
    expectTypeOf(whole$.pipe(retryAsEvents({ count: 3 }), cleanTurn({ turnId: 't' }))).toEqualTypeOf<
      Observable<TurnEvent>
    >();
    expectTypeOf(
      provider$.pipe(
        assembleToolCalls(),
        requireFinish(),
        retryAsEvents({ count: 3 }),
        cleanTurn({ turnId: 't' }),
      ),
    ).toEqualTypeOf<Observable<TurnEvent>>();
  });

  test('options are RetryConfig-like', () => {
    retryAsEvents({ count: 3, delay: 100, resetOnSuccess: false });
    retryAsEvents({ delay: (error, retryCount) => of(`${String(error)} ${retryCount}`) });
    retryAsEvents({ shouldRetry: (error) => error instanceof Error, reason: () => 'why' });
    // @ts-expect-error count is a number
    retryAsEvents({ count: '3' });
    // @ts-expect-error shouldRetry answers with a boolean
    retryAsEvents({ shouldRetry: () => 'yes' });
  });

  test('its error carries the attempt records', () => {
    expectTypeOf<TurnError['attempts']>().toEqualTypeOf<readonly FailedAttempt[] | undefined>();
    expectTypeOf<FailedAttempt['emitted']>().toBeNumber();
    expectTypeOf<TurnError>().toExtend<Error>();
  });
});

describe('requireFinish', () => {
  test('keeps the type of whole calls', () => {
    expectTypeOf(whole$.pipe(requireFinish())).toEqualTypeOf<Observable<AssembledEvent<ProviderEvent>>>();
    expectTypeOf(attemptedWhole$.pipe(requireFinish())).toEqualTypeOf<
      Observable<AssembledEvent<Attempted<ProviderEvent>>>
    >();
  });
});

describe('effectKey', () => {
  test('returns a string from a turn id and a call’s meaning', () => {
    expectTypeOf(effectKey).returns.toBeString();
    expectTypeOf(effectKey('t', { name: 'issue_refund', args: { order_id: 'ORD-1' } })).toBeString();
    expectTypeOf(effectKey('t', { name: 'issue_refund', args: {} }, 2)).toBeString();
    // A whole (keyed) call is accepted too: only its meaning counts.
    expectTypeOf<KeyedToolCall>().toExtend<Parameters<typeof effectKey>[1]>();
  });

  test('rejects a call without name, a turn id that is not a string, a step that is not a number', () => {
    // @ts-expect-error a call without name
    effectKey('t', { args: {} });
    // @ts-expect-error a call without args
    effectKey('t', { name: 'issue_refund' });
    // @ts-expect-error the turn id is a string
    effectKey(42, { name: 'issue_refund', args: {} });
    // @ts-expect-error the step is a number
    effectKey('t', { name: 'issue_refund', args: {} }, '2');
  });
});

describe('policies', () => {
  test('map ProviderEvent to PolicyEvent', () => {
    type Policy = OperatorFunction<ProviderEvent, PolicyEvent>;
    expectTypeOf(naivePolicy()).toEqualTypeOf<Policy>();
    expectTypeOf(resetOnlyPolicy()).toEqualTypeOf<Policy>();
    expectTypeOf(lateExecutionPolicy()).toEqualTypeOf<Policy>();
    expectTypeOf(provider$.pipe(lateExecutionPolicy())).toEqualTypeOf<Observable<PolicyEvent>>();
    // The naive policy's output is still typed: resets included, even though it never sends one.
    expectTypeOf<Extract<PolicyEvent, { type: 'usage' }>>().toEqualTypeOf<Attempted<UsageEvent>>();
  });

  test('take provider events only', () => {
    // @ts-expect-error already-tagged events are not provider events
    attempted$.pipe(resetOnRetry(), naivePolicy());
  });
});

describe('retryAsEvents with a count, as RxJS retry(count)', () => {
  test('takes a number as well as the options', () => {
    expectTypeOf(retryAsEvents<number>(3)).toEqualTypeOf<OperatorFunction<number, number | RetryEvent>>();
    expectTypeOf(of(1, 2).pipe(retryAsEvents(2))).toEqualTypeOf<Observable<number | RetryEvent>>();
    expectTypeOf(provider$.pipe(retryAsEvents(3))).toEqualTypeOf<Observable<ProviderEvent>>();
    retryAsEvents(Number.POSITIVE_INFINITY);
    retryAsEvents(undefined);
    // @ts-expect-error the count is a number
    retryAsEvents('3');
  });

  test('its error says how many attempts failed in total', () => {
    expectTypeOf<TurnError['failures']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<FailedAttempt['attempt']>().toBeNumber();
  });
});

describe('retryBudget', () => {
  test('makes a RetryBudget from optional numbers and a clock', () => {
    expectTypeOf(retryBudget()).toEqualTypeOf<RetryBudget>();
    expectTypeOf(retryBudget).parameter(0).toEqualTypeOf<RetryBudgetOptions | undefined>();
    expectTypeOf(
      retryBudget({ ttlMs: 10_000, percentCanRetry: 0.2, minRetriesPerSec: 10, now: Date.now }),
    ).toEqualTypeOf<RetryBudget>();
    expectTypeOf(retryBudget().tryWithdraw()).toBeBoolean();
    expectTypeOf(retryBudget().deposit()).toBeVoid();
    expectTypeOf(retryBudget().state()).toEqualTypeOf<RetryBudgetState>();
    expectTypeOf<RetryBudgetState>().toEqualTypeOf<{
      deposits: number;
      withdrawals: number;
      available: number;
      refusals: number;
    }>();
    // @ts-expect-error the window is a number of milliseconds
    retryBudget({ ttlMs: '10s' });
    // @ts-expect-error the clock returns milliseconds, not a Date
    retryBudget({ now: () => new Date() });
    // @ts-expect-error a misspelt option
    retryBudget({ percentageCanRetry: 0.2 });
  });

  test('retryAsEvents, turnPipeline and streamTurn take one as their budget', () => {
    const budget = retryBudget();
    expectTypeOf(provider$.pipe(retryAsEvents({ count: 3, budget }))).toEqualTypeOf<
      Observable<ProviderEvent>
    >();
    expectTypeOf(whole$.pipe(turnPipeline({ turnId: 't', retry: { count: 3, budget } }))).toEqualTypeOf<
      Observable<TurnEvent>
    >();
    expectTypeOf(
      streamTurn({ turnId: 't', adapter: openaiChat(), request: () => 'http://127.0.0.1/', budget }),
    ).toEqualTypeOf<Observable<TurnEvent>>();
    // A budget of your own (shared by several processes, say) is any object with the three methods.
    const own: RetryBudget = {
      deposit() {},
      tryWithdraw: () => true,
      state: () => ({ deposits: 0, withdrawals: 0, available: 0, refusals: 0 }),
    };
    retryAsEvents({ budget: own });
    // @ts-expect-error a budget is an object, not a share
    retryAsEvents({ budget: 0.2 });
    // @ts-expect-error tryWithdraw answers with a boolean
    retryAsEvents({ budget: { ...own, tryWithdraw: () => 1 } });
    // @ts-expect-error streamTurn's budget is a RetryBudget too
    streamTurn({ turnId: 't', adapter: openaiChat(), request: () => 'http://127.0.0.1/', budget: {} });
  });

  test('its refusal is a retries-exhausted TurnError with the attempt records', () => {
    expectTypeOf<TurnError['limit']>().toEqualTypeOf<'cap' | 'budget' | undefined>();
    expectTypeOf<TurnError['failures']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<TurnError['retryable']>().toBeBoolean();
  });
});

describe('reasoning and the final attempt', () => {
  test('reasoning is a provider event of its own, never text, and cleanTurn passes it on with its attempt', () => {
    expectTypeOf<ReasoningEvent>().toExtend<ProviderEvent>();
    expectTypeOf<ReasoningEvent>().not.toExtend<TextEvent>();
    expectTypeOf<Attempted<ReasoningEvent>>().toExtend<TurnEvent>();
    expectTypeOf<Attempted<ReasoningEvent>>().toExtend<PolicyEvent>();
    const turn = of<ReasoningEvent | TextEvent>({ type: 'reasoning', text: 'Check the order.' }).pipe(
      cleanTurn({ turnId: 't' }),
    );
    expectTypeOf(turn).toEqualTypeOf<Observable<TurnEvent>>();
  });

  test("the turn state has the live attempt's reasoning and response id; the finish carries the output", () => {
    expectTypeOf<TurnState['reasoning']>().toEqualTypeOf<string>();
    expectTypeOf<TurnState['responseId']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<FinishEvent['output']>().toEqualTypeOf<ProviderOutput | undefined>();
    expectTypeOf<FinishEvent['paused']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<UsageEvent['reasoningTokens']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<UsageEvent['cachedInputTokens']>().toEqualTypeOf<number | undefined>();
  });

  test('nextStep reads a finish, or its absence', () => {
    expectTypeOf(nextStep).parameter(0).toEqualTypeOf<Pick<FinishEvent, 'reason' | 'paused'> | undefined>();
    expectTypeOf(nextStep).returns.toEqualTypeOf<NextStep>();
    expectTypeOf<NextStep>().toEqualTypeOf<'done' | 'answer' | 'continue' | 'failed'>();
  });
});
