// Type tests: every adapter takes any source. An SDK's typed stream, `sseJson()`'s unknown payloads and a source of
// the adapter's own format all pipe in, and each adapter fits where an adapter of any format is expected
// (`OperatorFunction<unknown, ProviderEvent>`, `streamTurn`'s `adapter`). What a payload holds is checked at run
// time (`not-a-payload`, `invalid-field`).
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import type { GenerateContentResponse, Interactions } from '@google/genai';
import type { TextStreamPart, ToolSet } from 'ai';
import type { ProviderEvent } from 'cleanturn';
import {
  aiSdkParts,
  anthropicMessages,
  decodeWith,
  geminiContent,
  geminiInteractions,
  openaiChat,
  openaiResponses,
} from 'cleanturn/providers';
import { type SseMessage, sseJson, streamTurn } from 'cleanturn/transport';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import type { Observable, OperatorFunction } from 'rxjs';
import { describe, expectTypeOf, it } from 'vitest';

type AnyAdapter = OperatorFunction<unknown, ProviderEvent>;

const adapters = {
  aiSdkParts: aiSdkParts(),
  anthropicMessages: anthropicMessages(),
  decodeWith: decodeWith({ name: 'lines' }, () => ({ next() {} })),
  geminiContent: geminiContent(),
  geminiInteractions: geminiInteractions(),
  openaiChat: openaiChat(),
  openaiResponses: openaiResponses(),
};

declare const messages$: Observable<SseMessage>;

describe('adapter input types', () => {
  it('each adapter is an OperatorFunction<unknown, ProviderEvent>', () => {
    expectTypeOf(adapters.aiSdkParts).toEqualTypeOf<AnyAdapter>();
    expectTypeOf(adapters.anthropicMessages).toEqualTypeOf<AnyAdapter>();
    expectTypeOf(adapters.decodeWith).toEqualTypeOf<AnyAdapter>();
    expectTypeOf(adapters.geminiContent).toEqualTypeOf<AnyAdapter>();
    expectTypeOf(adapters.geminiInteractions).toEqualTypeOf<AnyAdapter>();
    expectTypeOf(adapters.openaiChat).toEqualTypeOf<AnyAdapter>();
    expectTypeOf(adapters.openaiResponses).toEqualTypeOf<AnyAdapter>();
  });

  it('each adapter fits where an adapter of any format is expected', () => {
    const table: Record<string, AnyAdapter> = adapters;
    expectTypeOf(table).toEqualTypeOf<Record<string, AnyAdapter>>();
    const chosen: AnyAdapter = Math.random() < 0.5 ? openaiChat() : anthropicMessages();
    expectTypeOf(streamTurn).toBeCallableWith({
      turnId: 'turn-42',
      request: () => new Request('https://example.test/v1/chat/completions'),
      adapter: chosen,
    });
  });

  it("sseJson()'s unknown payloads pipe into each adapter without a type argument", () => {
    for (const adapter of Object.values(adapters)) {
      expectTypeOf(messages$.pipe(sseJson(), adapter)).toEqualTypeOf<Observable<ProviderEvent>>();
    }
    expectTypeOf(messages$.pipe(sseJson(), openaiChat())).toEqualTypeOf<Observable<ProviderEvent>>();
  });

  it("each official SDK's stream type pipes into its adapter", () => {
    const chat$ = {} as Observable<ChatCompletionChunk>;
    const responses$ = {} as Observable<ResponseStreamEvent>;
    const anthropic$ = {} as Observable<RawMessageStreamEvent>;
    const gemini$ = {} as Observable<GenerateContentResponse>;
    const interactions$ = {} as Observable<Interactions.InteractionSSEEvent>;
    const parts$ = {} as Observable<TextStreamPart<ToolSet>>;
    expectTypeOf(chat$.pipe(openaiChat())).toEqualTypeOf<Observable<ProviderEvent>>();
    expectTypeOf(responses$.pipe(openaiResponses())).toEqualTypeOf<Observable<ProviderEvent>>();
    expectTypeOf(anthropic$.pipe(anthropicMessages())).toEqualTypeOf<Observable<ProviderEvent>>();
    expectTypeOf(gemini$.pipe(geminiContent())).toEqualTypeOf<Observable<ProviderEvent>>();
    expectTypeOf(interactions$.pipe(geminiInteractions())).toEqualTypeOf<Observable<ProviderEvent>>();
    expectTypeOf(parts$.pipe(aiSdkParts())).toEqualTypeOf<Observable<ProviderEvent>>();
  });

  it('an adapter still emits provider events only', () => {
    // @ts-expect-error: an adapter's output is ProviderEvent, not a wider type
    const wrong: OperatorFunction<unknown, { type: 'chunk' }> = openaiChat();
    void wrong;
  });
});
