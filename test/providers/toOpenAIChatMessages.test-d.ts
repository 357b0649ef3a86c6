// Type tests: what toOpenAIChatMessages() returns goes into the openai SDK's (v6) own request types unchanged, the
// calls of OpenAIChatOutput are the SDK's tool calls, and the turn states of the pipelines are what it takes.
import type { KeyedToolCall, ToolResultLike, TurnState } from 'cleanturn';
import { toOpenAIChatMessages } from 'cleanturn/providers';
import type OpenAI from 'openai';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import { describe, expectTypeOf, it } from 'vitest';
import type { OpenAIChatOutput } from '../../src/providers/openaiChat.js';
import type { ReleasedCall, RepeatedToolCall } from '../../src/types.js';

declare const turn: TurnState;
declare const results: ToolResultLike[];

type Messages = ReturnType<typeof toOpenAIChatMessages>;

describe('toOpenAIChatMessages', () => {
  it('returns ChatCompletionMessageParam[]: the next request takes it as it is', () => {
    expectTypeOf(toOpenAIChatMessages(turn, results)).toMatchTypeOf<ChatCompletionMessageParam[]>();
    const params: ChatCompletionCreateParamsStreaming = {
      model: 'gpt-4.1',
      stream: true,
      messages: [{ role: 'user', content: 'Refund ORD-7781.' }, ...toOpenAIChatMessages(turn, results)],
    };
    expectTypeOf(params.messages).toMatchTypeOf<ChatCompletionMessageParam[]>();
    const history: OpenAI.ChatCompletionMessageParam[] = [];
    history.push(...toOpenAIChatMessages(turn, results));
  });

  it('is an assistant message, then tool messages', () => {
    expectTypeOf<
      Extract<Messages[number], { role: 'assistant' }>
    >().toMatchTypeOf<ChatCompletionAssistantMessageParam>();
    expectTypeOf<
      Extract<Messages[number], { role: 'tool' }>
    >().toMatchTypeOf<ChatCompletionToolMessageParam>();
    expectTypeOf<Messages[number]['role']>().toEqualTypeOf<'assistant' | 'tool'>();
  });

  it("takes the turn states of accumulateTurn(), of an executor's pipeline, and of a neutral source", () => {
    expectTypeOf(toOpenAIChatMessages).toBeCallableWith(turn, results);
    expectTypeOf(toOpenAIChatMessages).toBeCallableWith({} as TurnState<ReleasedCall>, []);
    expectTypeOf(toOpenAIChatMessages).toBeCallableWith(
      {} as TurnState<KeyedToolCall | RepeatedToolCall>,
      [],
    );
    expectTypeOf(toOpenAIChatMessages).toBeCallableWith({ finish: undefined, text: '', toolCalls: [] }, []);
    // @ts-expect-error a turn without its calls cannot be answered
    toOpenAIChatMessages({ finish: undefined, text: '' }, []);
    // @ts-expect-error the results are tool-result events
    toOpenAIChatMessages(turn, [{ id: 'call_1', content: 'ok' }]);
  });
});

describe('OpenAIChatOutput', () => {
  it("holds the assistant message: its calls are the SDK's function tool calls", () => {
    type Call = NonNullable<OpenAIChatOutput['message']['tool_calls']>[number];
    expectTypeOf<Call>().toMatchTypeOf<ChatCompletionMessageFunctionToolCall>();
    expectTypeOf<OpenAIChatOutput['message']['content']>().toEqualTypeOf<string | null>();
    expectTypeOf<OpenAIChatOutput['format']>().toEqualTypeOf<'openai-chat'>();
  });
});
