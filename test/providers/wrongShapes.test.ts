// A chunk of the wrong shape (`choices` an object, `delta` a string, `content` a number, `usage` a string…) is a
// ProviderError naming the field, in every adapter: never a silent `stop` that drops what the chunk carried.
// Each case is a stream that would otherwise finish cleanly: the malformed payload, then a well-formed end.
import type { ProviderEvent } from 'cleanturn';
import {
  aiSdkParts,
  anthropicMessages,
  geminiContent,
  openaiChat,
  openaiResponses,
  ProviderError,
} from 'cleanturn/providers';
import { from, lastValueFrom, type OperatorFunction, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';

type Case = [what: string, payload: unknown, field: string];

/** Runs `payloads` through `operator` and returns the error the stream ended with (or the events, if none). */
async function outcome(operator: OperatorFunction<never, ProviderEvent>, payloads: unknown[]) {
  return lastValueFrom(from(payloads as never[]).pipe(operator, toArray())).then(
    (events) => ({ events }),
    (error: unknown) => ({ error }),
  );
}

function expectInvalidField(result: { error?: unknown; events?: unknown }, operator: string, field: string) {
  expect(result).toEqual({ error: expect.any(ProviderError) });
  expect(result.error).toMatchObject({ code: 'invalid-field', operator, field, retryable: false });
}

// Chat Completions: a chunk of choice 0 with the given delta, and the end of a well-formed stream.
const choice = (fields: object) => ({ object: 'chat.completion.chunk', choices: [{ index: 0, ...fields }] });
const chatEnd = [choice({ delta: {}, finish_reason: 'stop' }), '[DONE]'];

// biome-ignore format: a table
const chat: Case[] = [
  ['choices an object',                { choices: { index: 0, delta: { content: 'Refund' } } },          'choices'],
  ['choices a string',                 { choices: 'Refund' },                                          'choices'],
  ['a choice that is a string',        { choices: ['Refund'] },                                        'choices[0]'],
  ['delta a string',                   choice({ delta: 'Refunding the damaged book.' }),               'choices[0].delta'],
  ['content a number',                 choice({ delta: { content: 42 } }),                             'choices[0].delta.content'],
  ['content an object',                choice({ delta: { content: { text: 'Refund' } } }),            'choices[0].delta.content'],
  ['refusal a number',                 choice({ delta: { refusal: 1 } }),                              'choices[0].delta.refusal'],
  ['tool_calls an object',             choice({ delta: { tool_calls: { index: 0, id: 'call_1' } } }), 'choices[0].delta.tool_calls'],
  ['tool_calls a string',              choice({ delta: { tool_calls: 'issue_refund' } }),              'choices[0].delta.tool_calls'],
  ['a tool call that is a string',     choice({ delta: { tool_calls: ['issue_refund'] } }),            'choices[0].delta.tool_calls[0]'],
  ['function a string',                choice({ delta: { tool_calls: [{ index: 0, id: 'call_1', function: 'issue_refund' }] } }), 'choices[0].delta.tool_calls[0].function'],
  ['function_call a string',           choice({ delta: { function_call: 'issue_refund' } }),           'choices[0].delta.function_call'],
  ['finish_reason a number',           choice({ delta: {}, finish_reason: 1 }),                        'choices[0].finish_reason'],
  ['reasoning_content a number',       choice({ delta: { reasoning_content: 7 } }),                    'choices[0].delta.reasoning_content'],
  ['reasoning_details a string',       choice({ delta: { reasoning_details: 'thinking' } }),           'choices[0].delta.reasoning_details'],
  ['a reasoning detail text a number', choice({ delta: { reasoning_details: [{ type: 'reasoning.text', text: 1 }] } }), 'choices[0].delta.reasoning_details[0].text'],
  ['a response id a number',           { id: 7, choices: [] },                                         'id'],
  ['usage a string',                   { choices: [], usage: 'lots' },                                 'usage'],
  ['a token count that is a string',   { choices: [], usage: { prompt_tokens: '142', completion_tokens: 31 } }, 'usage.prompt_tokens'],
];

// Responses: the end of a well-formed stream.
const completed = { type: 'response.completed', response: { status: 'completed', output: [] } };
// biome-ignore format: a table
const responses: Case[] = [
  ['a type that is a number',          { type: 5, delta: 'Refund' },                                                   'type'],
  ['an added item that is a string',   { type: 'response.output_item.added', output_index: 0, item: 'function_call' }, 'item'],
  ['response a string',                { type: 'response.completed', response: 'completed' },                         'response'],
  ['output an object',                 { type: 'response.completed', response: { output: { type: 'function_call' } } }, 'response.output'],
  ['usage a number',                   { type: 'response.completed', response: { output: [], usage: 173 } },          'response.usage'],
  ['a token count that is a string',   { type: 'response.completed', response: { output: [], usage: { input_tokens: '142' } } }, 'response.usage.input_tokens'],
  ['incomplete_details a string',      { type: 'response.incomplete', response: { incomplete_details: 'max_output_tokens' } }, 'response.incomplete_details'],
  ['a text delta that is a number',    { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, delta: 7 }, 'delta'],
  ['a reasoning delta that is a number', { type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', output_index: 0, summary_index: 0, delta: 7 }, 'delta'],
  ['a summary_index that is not an index', { type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', output_index: 0, summary_index: 'first', delta: 'Hmm' }, 'summary_index'],
  ['a reasoning text done that is a number', { type: 'response.reasoning_text.done', item_id: 'rs_1', output_index: 0, content_index: 0, text: 7 }, 'text'],
  ['an item type that is a number',    { type: 'response.output_item.done', output_index: 0, item: { id: 'rs_1', type: 3 } }, 'item.type'],
  ['a response id that is a number',   { type: 'response.created', response: { id: 7, status: 'in_progress' } },       'response.id'],
  ['usage details a number',           { type: 'response.completed', response: { output: [], usage: { input_tokens_details: 5 } } }, 'response.usage.input_tokens_details'],
  ['a reasoning count that is a string', { type: 'response.completed', response: { output: [], usage: { output_tokens_details: { reasoning_tokens: '9' } } } }, 'response.usage.output_tokens_details.reasoning_tokens'],
];

// Anthropic Messages: the end of a well-formed stream.
const anthropicEnd = [
  { type: 'message_delta', delta: { stop_reason: 'end_turn' } },
  { type: 'message_stop' },
];
// biome-ignore format: a table
const anthropic: Case[] = [
  ['message a string',                 { type: 'message_start', message: 'msg_1' },                                  'message'],
  ['message.usage a number',           { type: 'message_start', message: { id: 'msg_1', usage: 412 } },              'message.usage'],
  ['a message_delta delta a string',   { type: 'message_delta', delta: 'end_turn' },                                  'delta'],
  ['a message_delta usage a string',   { type: 'message_delta', delta: {}, usage: 'many' },                          'usage'],
  ['a token count that is a string',   { type: 'message_delta', delta: {}, usage: { output_tokens: '58' } },          'usage.output_tokens'],
  ['a text delta that is a number',    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 5 } }, 'delta.text'],
];
const anthropicStart = [
  { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 10, output_tokens: 1 } } },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
];

// Gemini: the end of a well-formed stream.
const geminiEnd = [
  { candidates: [{ content: { parts: [{ text: '' }], role: 'model' }, finishReason: 'STOP', index: 0 }] },
];
const candidate = (fields: object) => ({ candidates: [{ index: 0, ...fields }] });
// biome-ignore format: a table
const gemini: Case[] = [
  ['candidates an object',             { candidates: { content: { parts: [{ text: 'Refund' }] } } },                  'candidates'],
  ['a candidate that is a string',     { candidates: ['Refund'] },                                                    'candidates[0]'],
  ['a candidate index that is a bool', { candidates: [{ index: true, content: { parts: [{ text: 'Refund' }] } }] },   'candidates[0].index'],
  ['content a string',                 candidate({ content: 'Refunding the damaged book.' }),                        'candidates[0].content'],
  ['parts an object',                  candidate({ content: { parts: { text: 'Refund' } } }),                        'candidates[0].content.parts'],
  ['a part that is a string',          candidate({ content: { parts: ['Refund'] } }),                                'candidates[0].content.parts[0]'],
  ['usageMetadata a number',           { usageMetadata: 97 },                                                         'usageMetadata'],
  ['a token count that is a string',   { usageMetadata: { promptTokenCount: '88' } },                                 'usageMetadata.promptTokenCount'],
  ['promptFeedback a string',          { promptFeedback: 'SAFETY' },                                                  'promptFeedback'],
  ['a text that is a number',          candidate({ content: { parts: [{ text: 5 }] } }),                             'candidates[0].content.parts[0].text'],
  ['a thought flag that is a string',  candidate({ content: { parts: [{ text: 'Hmm', thought: 'true' }] } }),        'candidates[0].content.parts[0].thought'],
  ['a signature that is a number',     candidate({ content: { parts: [{ text: 'Hi', thoughtSignature: 7 }] } }),     'candidates[0].content.parts[0].thoughtSignature'],
  ['a responseId that is a number',    { responseId: 42 },                                                           'responseId'],
  ['a cached count that is a string',  { usageMetadata: { cachedContentTokenCount: '12' } },                         'usageMetadata.cachedContentTokenCount'],
];

// AI SDK parts: the end of a well-formed stream.
const aiSdkEnd = [{ type: 'finish', finishReason: 'stop' }];
// biome-ignore format: a table
const aiSdk: Case[] = [
  ['a finish-step usage a number',     { type: 'finish-step', usage: 31 },                                            'usage'],
  ['a token count that is a string',   { type: 'finish-step', usage: { inputTokens: '142' } },                        'usage.inputTokens'],
  ['a finish totalUsage a string',     { type: 'finish', totalUsage: 'all of it' },                                   'totalUsage'],
  ['a finish reason that is a number', { type: 'finish', finishReason: 1 },                                           'finishReason'],
  ['a text delta that is a number',    { type: 'text-delta', id: '0', text: 5 },                                      'text'],
  ['a reasoning delta that is a number', { type: 'reasoning-delta', id: '0', delta: 5 },                            'delta'],
  ['providerMetadata a string',        { type: 'reasoning-end', id: '0', providerMetadata: 'EqQB' },                  'providerMetadata'],
  ['a response id that is a number',   { type: 'finish-step', response: { id: 7 } },                                  'response.id'],
  ['usage details a string',           { type: 'finish-step', usage: { outputTokenDetails: 'many' } },                'usage.outputTokenDetails'],
];

describe('a chunk of the wrong shape is a ProviderError naming the field, not a silent stop', () => {
  describe('openaiChat', () => {
    it.each(chat)('%s', async (_what, payload, field) => {
      expectInvalidField(await outcome(openaiChat() as never, [payload, ...chatEnd]), 'openaiChat', field);
    });
  });

  describe('openaiResponses', () => {
    it.each(responses)('%s', async (_what, payload, field) => {
      const result = await outcome(openaiResponses() as never, [payload, completed]);
      expectInvalidField(result, 'openaiResponses', field);
    });
  });

  describe('anthropicMessages', () => {
    it.each(anthropic)('%s', async (_what, payload, field) => {
      const start = (payload as { type: string }).type === 'message_start' ? [] : anthropicStart;
      const result = await outcome(anthropicMessages() as never, [...start, payload, ...anthropicEnd]);
      expectInvalidField(result, 'anthropicMessages', field);
    });
  });

  describe('geminiContent', () => {
    it.each(gemini)('%s', async (_what, payload, field) => {
      expectInvalidField(
        await outcome(geminiContent() as never, [payload, ...geminiEnd]),
        'geminiContent',
        field,
      );
    });
  });

  describe('aiSdkParts', () => {
    it.each(aiSdk)('%s', async (_what, payload, field) => {
      const end = (payload as { type: string }).type === 'finish' ? [] : aiSdkEnd;
      expectInvalidField(await outcome(aiSdkParts() as never, [payload, ...end]), 'aiSdkParts', field);
    });
  });
});

describe('the shapes the formats allow still read', () => {
  it('null where a field may be null: delta, content, tool_calls, usage, finish_reason (Chat Completions)', async () => {
    const result = await outcome(openaiChat() as never, [
      { choices: null, usage: null },
      choice({ delta: null, finish_reason: null }),
      choice({
        delta: {
          content: null,
          refusal: null,
          tool_calls: null,
          function_call: null,
          reasoning: null,
          reasoning_content: null,
          reasoning_details: null,
        },
      }),
      choice({ delta: { content: 'Refund started.' } }),
      {
        id: null,
        choices: [],
        usage: { prompt_tokens: null, completion_tokens: 4, prompt_tokens_details: null },
      },
      ...chatEnd,
    ]);
    expect(result).toEqual({
      events: [
        { type: 'text', text: 'Refund started.' },
        { type: 'usage', outputTokens: 4 },
        {
          type: 'finish',
          reason: 'stop',
          output: { format: 'openai-chat', message: { role: 'assistant', content: 'Refund started.' } },
        },
      ],
    });
  });

  it('a null cache count in an Anthropic usage (as recorded streams send it)', async () => {
    const result = await outcome(anthropicMessages() as never, [
      ...anthropicStart,
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: 5, cache_creation_input_tokens: null },
      },
      { type: 'message_stop' },
    ]);
    expect(result).toMatchObject({
      events: expect.arrayContaining([
        expect.objectContaining({ type: 'finish', reason: 'stop', raw: 'end_turn' }),
      ]),
    });
  });
});
