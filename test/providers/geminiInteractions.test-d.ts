// Type tests: geminiInteractions() is an operator from any source to ProviderEvent; what the @google/genai SDK's
// Interactions stream yields pipes into it and fits the adapter's own event type, and the output's steps are the
// SDK's steps.
import type { GoogleGenAI, Interactions } from '@google/genai';
import { attemptPipeline, type ProviderEvent } from 'cleanturn';
import { geminiInteractions } from 'cleanturn/providers';
import { concatMap, defer, type Observable, type OperatorFunction } from 'rxjs';
import { describe, expectTypeOf, it } from 'vitest';
import type {
  GeminiInteractionsErrorInfo,
  GeminiInteractionsEvent,
  GeminiInteractionsOutput,
} from '../../src/providers/geminiInteractions.js';
import type { AdapterOptions } from '../../src/providers/shared.js';

declare const ai: GoogleGenAI;

type OutputStep = GeminiInteractionsOutput['steps'][number];

describe('geminiInteractions types', () => {
  it('is an OperatorFunction<unknown, ProviderEvent>', () => {
    expectTypeOf(geminiInteractions()).toEqualTypeOf<OperatorFunction<unknown, ProviderEvent>>();
    expectTypeOf(geminiInteractions)
      .parameter(0)
      .toEqualTypeOf<AdapterOptions<GeminiInteractionsErrorInfo> | undefined>();
    expectTypeOf<
      Parameters<NonNullable<AdapterOptions<GeminiInteractionsErrorInfo>['retryable']>>[0]
    >().toEqualTypeOf<GeminiInteractionsErrorInfo>();
  });

  it("takes the SDK's InteractionSSEEvent as it is", () => {
    expectTypeOf<Interactions.InteractionSSEEvent>().toMatchTypeOf<GeminiInteractionsEvent>();
    const turn$ = defer(() =>
      ai.interactions.create({ model: 'gemini-3-flash-preview', input: 'Refund ORD-7781.', stream: true }),
    ).pipe(
      // The SDK's Stream is a ReadableStream too: read it as the async iterable of its events.
      concatMap((stream): AsyncIterable<Interactions.InteractionSSEEvent> => stream),
      attemptPipeline(geminiInteractions()),
    );
    expectTypeOf(turn$).toMatchTypeOf<Observable<unknown>>();
  });

  it("the output's function_call steps are the SDK's FunctionCallStep; a thought's signature is its signature", () => {
    expectTypeOf<
      Extract<OutputStep, { type: 'function_call' }>
    >().toMatchTypeOf<Interactions.FunctionCallStep>();
    expectTypeOf<Extract<OutputStep, { type: 'thought' }>['signature']>().toMatchTypeOf<
      Interactions.ThoughtStep['signature']
    >();
    expectTypeOf<GeminiInteractionsOutput['format']>().toEqualTypeOf<'gemini-interactions'>();
  });

  it('refuses what is not an event', () => {
    // @ts-expect-error: an event needs its event_type
    const missing: GeminiInteractionsEvent = { index: 0 };
    expectTypeOf(missing).toEqualTypeOf<GeminiInteractionsEvent>();
  });
});
