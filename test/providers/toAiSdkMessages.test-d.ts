// Types of toAiSdkMessages: what it builds is what ai@6 takes as messages (`ModelMessage[]`, the `messages` of
// streamText), its output's content is an assistant message's content, and the turn states of the pipelines fit it.
import type { AssistantContent, ModelMessage, streamText, ToolContent } from 'ai';
import type { TurnState } from 'cleanturn';
import type { ToolResultEvent } from 'cleanturn/effects';
import { toAiSdkMessages } from 'cleanturn/providers';
import { describe, expectTypeOf, test } from 'vitest';
import type { AiSdkOutput } from '../../src/providers/aiSdkParts.js';

declare const turn: TurnState;
declare const results: ToolResultEvent[];

describe('toAiSdkMessages', () => {
  test('its messages are ai@6 ModelMessages, for the messages of streamText', () => {
    const messages = toAiSdkMessages(turn, results);
    expectTypeOf(messages).toMatchTypeOf<ModelMessage[]>();
    const next: ModelMessage[] = [{ role: 'user', content: 'Please refund order ORD-7781.' }, ...messages];
    expectTypeOf(next).toMatchTypeOf<Parameters<typeof streamText>[0]['messages']>();
  });

  test('an assistant message takes the content of the output; a tool message its results', () => {
    type Message = ReturnType<typeof toAiSdkMessages>[number];
    expectTypeOf<Extract<Message, { role: 'assistant' }>['content']>().toMatchTypeOf<AssistantContent>();
    expectTypeOf<Extract<Message, { role: 'tool' }>['content']>().toMatchTypeOf<ToolContent>();
    expectTypeOf<[...AiSdkOutput['content']]>().toMatchTypeOf<AssistantContent>();
  });

  test('the turn states of accumulateTurn fit its turn; results are tool-results', () => {
    expectTypeOf(toAiSdkMessages).parameter(0).toMatchTypeOf<object>();
    expectTypeOf<TurnState>().toMatchTypeOf<Parameters<typeof toAiSdkMessages>[0]>();
    expectTypeOf<ToolResultEvent[]>().toMatchTypeOf<Parameters<typeof toAiSdkMessages>[1]>();
  });

  test('a content part that ai@6 does not take is rejected (the check can fail)', () => {
    type Bad = { role: 'assistant'; content: { type: 'thinking'; thinking: string }[] };
    expectTypeOf<Bad>().not.toMatchTypeOf<ModelMessage>();
    const output: AiSdkOutput = { format: 'ai-sdk', content: [] };
    // @ts-expect-error: the output is data of its own format only
    const wrong: AiSdkOutput = { format: 'gemini', content: output.content };
    expectTypeOf(wrong).toEqualTypeOf<AiSdkOutput>();
  });
});
