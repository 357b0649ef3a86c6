// Type tests: what toAnthropicMessages() returns goes into @anthropic-ai/sdk's own request types unchanged, the
// blocks of AnthropicOutput are the SDK's request blocks, and the SDK's stream events are what the adapter reads.
import type { BetaRawMessageStreamEvent } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type {
  MessageCreateParamsStreaming,
  MessageParam,
  RawMessageStreamEvent,
  RedactedThinkingBlockParam,
  TextBlockParam,
  ThinkingBlockParam,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type { KeyedToolCall, ToolResultLike, TurnState } from 'cleanturn';
import { toAnthropicMessages } from 'cleanturn/providers';
import { describe, expectTypeOf, it } from 'vitest';
import type { AnthropicOutput, AnthropicStreamEvent } from '../../src/providers/anthropicMessages.js';
import type { RepeatedToolCall } from '../../src/types.js';

declare const turn: TurnState;
declare const results: ToolResultLike[];

type Messages = ReturnType<typeof toAnthropicMessages>;
type Block = AnthropicOutput['content'][number];

describe('toAnthropicMessages', () => {
  it('returns MessageParam[]: the next request takes it as it is', () => {
    expectTypeOf(toAnthropicMessages(turn, results)).toMatchTypeOf<MessageParam[]>();
    const params: MessageCreateParamsStreaming = {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      stream: true,
      messages: [{ role: 'user', content: 'Refund ORD-7781.' }, ...toAnthropicMessages(turn, results)],
    };
    expectTypeOf(params.messages).toMatchTypeOf<MessageParam[]>();
  });

  it('answers with ToolResultBlockParams in a user message', () => {
    type User = Extract<Messages[number], { role: 'user' }>;
    expectTypeOf<User>().toMatchTypeOf<MessageParam>();
    expectTypeOf<User['content'][number]>().toMatchTypeOf<ToolResultBlockParam>();
  });

  it("takes the turn states of accumulateTurn(), of an executor's pipeline, and of a neutral source", () => {
    expectTypeOf(toAnthropicMessages).toBeCallableWith(turn, results);
    expectTypeOf(toAnthropicMessages).toBeCallableWith({} as TurnState<KeyedToolCall | RepeatedToolCall>, []);
    expectTypeOf(toAnthropicMessages).toBeCallableWith({ finish: undefined, text: '', toolCalls: [] }, []);
    // @ts-expect-error a turn without its calls cannot be answered
    toAnthropicMessages({ finish: undefined, text: '' }, []);
  });
});

describe('AnthropicOutput', () => {
  it("holds the SDK's request blocks for thinking, redacted thinking, text and calls", () => {
    expectTypeOf<Extract<Block, { type: 'thinking' }>>().toMatchTypeOf<ThinkingBlockParam>();
    expectTypeOf<Extract<Block, { type: 'redacted_thinking' }>>().toMatchTypeOf<RedactedThinkingBlockParam>();
    expectTypeOf<Omit<Extract<Block, { type: 'text' }>, 'citations'>>().toMatchTypeOf<TextBlockParam>();
    expectTypeOf<Extract<Block, { type: 'tool_use' }>>().toMatchTypeOf<ToolUseBlockParam>();
    expectTypeOf<AnthropicOutput['format']>().toEqualTypeOf<'anthropic-messages'>();
  });
});

describe('anthropicMessages() input', () => {
  it("takes the SDK's stream events, the beta ones (MCP, compaction) too", () => {
    expectTypeOf<RawMessageStreamEvent>().toMatchTypeOf<AnthropicStreamEvent>();
    expectTypeOf<BetaRawMessageStreamEvent>().toMatchTypeOf<AnthropicStreamEvent>();
  });
});
