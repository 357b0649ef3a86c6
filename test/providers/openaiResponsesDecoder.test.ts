// The Responses decoder on its own, without RxJS: decodeAll runs it under the rules of the shared operator.
import { type DecoderSink, ProviderError } from 'cleanturn/providers';
import { delta, finish, reasoning, text, usage } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import { decodeAll } from '../../src/providers/decodeWith.js';
import type { OpenAIErrorInfo } from '../../src/providers/openaiErrors.js';
import { OpenAIResponsesDecoder, type OpenAIResponsesEvent } from '../../src/providers/openaiResponses.js';
import type { AdapterOptions } from '../../src/providers/shared.js';

const decode = (
  payloads: readonly (OpenAIResponsesEvent | string)[],
  ending: { error: unknown } | 'complete' = 'complete',
  options: AdapterOptions<OpenAIErrorInfo> = {},
) =>
  decodeAll(
    { name: 'openaiResponses', endMarker: '[DONE]' },
    (sink: DecoderSink) => new OpenAIResponsesDecoder(sink, options),
    payloads,
    ending,
  );

const textDelta = (value: string, seq?: number): OpenAIResponsesEvent => ({
  type: 'response.output_text.delta',
  item_id: 'msg_1',
  output_index: 0,
  delta: value,
  ...(seq === undefined ? {} : { sequence_number: seq }),
});
const completed: OpenAIResponsesEvent = {
  type: 'response.completed',
  response: { status: 'completed', usage: { input_tokens: 3, output_tokens: 1 } },
};
const call: OpenAIResponsesEvent = {
  type: 'response.output_item.added',
  output_index: 0,
  item: { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'lookup_order', arguments: '' },
};

describe('the openaiResponses decoder (decodeAll, no RxJS)', () => {
  it('text, then the usage and the finish at response.completed', () => {
    expect(decode([textDelta('Hi'), completed])).toEqual({
      events: [text('Hi'), usage(3, 1), finish('stop', 'completed')],
    });
  });

  it('response.completed is the end: nothing after it is read, a source error after it completes', () => {
    const late = [textDelta('late'), { type: 'error', code: 'server_error', message: 'm' }];
    expect(decode([completed, ...late])).toEqual({ events: [usage(3, 1), finish('stop', 'completed')] });
    expect(decode([completed], { error: new TypeError('terminated') })).toEqual({
      events: [usage(3, 1), finish('stop', 'completed')],
    });
  });

  it('a source that ends without a terminal event gives its events and no finish', () => {
    expect(decode([textDelta('Checking'), call])).toEqual({
      events: [text('Checking'), delta(0, '', { id: 'call_1', name: 'lookup_order' })],
    });
  });

  it('an error event is a ProviderError from the one table; the retryable option comes first', () => {
    const error = { type: 'error', code: 'rate_limit_exceeded', message: 'slow down' };
    expect(decode([textDelta('x'), error]).error).toMatchObject({
      retryable: true,
      code: 'upstream',
      upstreamCode: 'rate_limit_exceeded',
    });
    const decided = decode([error], 'complete', { retryable: () => false }).error;
    expect(decided).toBeInstanceOf(ProviderError);
    expect(decided).toMatchObject({ retryable: false });
  });

  it('a nested error event whose error is a string keeps it as the message', () => {
    const error = decode([
      { type: 'error', error: 'upstream connect error' } as unknown as OpenAIResponsesEvent,
    ]).error;
    expect(error).toMatchObject({ message: 'openai-responses: upstream connect error', retryable: true });
  });

  it('an argument delta for an item never added is an unknown-reference error', () => {
    const orphan: OpenAIResponsesEvent = {
      type: 'response.function_call_arguments.delta',
      item_id: 'fc_9',
      output_index: 1,
      delta: '{',
    };
    const { events, error } = decode([call, orphan, completed]);
    expect(events).toEqual([delta(0, '', { id: 'call_1', name: 'lookup_order' })]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'unknown-reference', field: 'item_id', payload: orphan });
  });

  it('drops replayed sequence numbers', () => {
    expect(decode([textDelta('a', 1), textDelta('a', 1), textDelta('b', 2)]).events).toEqual([
      text('a'),
      text('b'),
    ]);
  });

  it('[DONE] ends the stream, as the official SDK reads it; another string is not a payload', () => {
    expect(decode([textDelta('a'), '[DONE]', textDelta('b')])).toEqual({ events: [text('a')] });
    expect(decode(['{"type":"response.completed"}']).error).toMatchObject({ code: 'not-a-payload' });
  });
});

describe('the openaiResponses decoder: reasoning, the output, the response id', () => {
  const summary = (value: string, index = 0, item = 'rs_1'): OpenAIResponsesEvent => ({
    type: 'response.reasoning_summary_text.delta',
    item_id: item,
    output_index: 0,
    summary_index: index,
    delta: value,
  });
  const reasoningItem = { id: 'rs_1', type: 'reasoning', encrypted_content: 'gAAA-canonical', summary: [] };
  const fnDone = {
    id: 'fc_1',
    type: 'function_call',
    call_id: 'call_1',
    name: 'lookup_order',
    arguments: '{}',
  };

  it('summary deltas are reasoning, never text; the next summary part starts with a paragraph break', () => {
    const events = decode([
      summary('**Checking**'),
      summary(' the order.'),
      summary('**Refunds**', 1),
      completed,
    ]);
    expect(events.events.slice(0, 3)).toEqual([
      reasoning('**Checking**'),
      reasoning(' the order.'),
      reasoning('\n\n**Refunds**'),
    ]);
  });

  it('reasoning_text deltas (open-weight servers) are reasoning too; a .done without deltas gives its text once', () => {
    const raw: OpenAIResponsesEvent = {
      type: 'response.reasoning_text.delta',
      item_id: 'rs_1',
      output_index: 0,
      content_index: 0,
      delta: 'The user asks',
    };
    const doneAfter = {
      ...raw,
      type: 'response.reasoning_text.done',
      delta: undefined,
      text: 'The user asks',
    };
    const doneAlone = {
      ...summary(''),
      type: 'response.reasoning_summary_text.done',
      summary_index: 1,
      text: 'Alone.',
    };
    expect(decode([raw, doneAfter, doneAlone, completed]).events.slice(0, 2)).toEqual([
      reasoning('The user asks'),
      reasoning('\n\nAlone.'),
    ]);
  });

  it('keepalive events are read past, whatever they carry', () => {
    const keepalive = { type: 'keepalive', sequence_number: 1 } as OpenAIResponsesEvent;
    expect(decode([textDelta('a', 0), keepalive, textDelta('b', 2), completed]).events).toEqual([
      text('a'),
      text('b'),
      usage(3, 1),
      finish('stop', 'completed'),
    ]);
  });

  it('the finish carries the response id and the output: the done items, unless response.output has items', () => {
    const created = {
      type: 'response.created',
      response: { id: 'resp_1', status: 'in_progress', output: [] },
    };
    const partial = { ...reasoningItem, encrypted_content: 'gAAA-partial' };
    const doneEvents = [
      { type: 'response.output_item.added', output_index: 0, item: partial },
      { type: 'response.output_item.done', output_index: 0, item: reasoningItem },
      { type: 'response.output_item.done', output_index: 1, item: fnDone },
    ] as OpenAIResponsesEvent[];
    const output = { format: 'openai-responses', items: [reasoningItem, fnDone] };
    const fromDone = decode([
      created,
      ...doneEvents,
      { type: 'response.completed', response: { output: [] } },
    ]);
    expect(fromDone.events.at(-1)).toEqual({
      ...finish('tool-calls', 'completed'),
      responseId: 'resp_1',
      output,
    });
    const authoritative = [
      { ...reasoningItem, summary: [{ type: 'summary_text', text: 'Sent whole.' }] },
      fnDone,
    ];
    const completedWith = { type: 'response.completed', response: { id: 'resp_2', output: authoritative } };
    expect(decode([created, ...doneEvents, completedWith]).events.at(-1)).toEqual({
      ...finish('tool-calls', 'completed'),
      responseId: 'resp_2',
      output: { format: 'openai-responses', items: authoritative },
    });
  });

  it('no output when an item was added but never done and response.output has none: the stream is not whole', () => {
    const events = decode([call, { type: 'response.completed', response: { id: 'resp_1' } }]).events;
    expect(events.at(-1)).toEqual({ ...finish('tool-calls', 'completed'), responseId: 'resp_1' });
  });

  it('usage keeps the cached input tokens and the reasoning tokens', () => {
    const usageDetails = {
      input_tokens: 412,
      input_tokens_details: { cached_tokens: 256 },
      output_tokens: 230,
      output_tokens_details: { reasoning_tokens: 192 },
    };
    const events = decode([{ type: 'response.completed', response: { usage: usageDetails } }]).events;
    expect(events[0]).toEqual({ ...usage(412, 230), cachedInputTokens: 256, reasoningTokens: 192 });
  });
});
