// The Responses decoder on its own, without RxJS: decodeAll runs it under the rules of the shared operator.
import { type DecoderSink, decodeAll, ProviderError, ProviderPayloadError } from 'cleanturn/providers';
import { delta, finish, text, usage } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import {
  OpenAIResponsesDecoder,
  type OpenAIResponsesEvent,
  type OpenAIResponsesOptions,
} from '../../src/providers/openaiResponses.js';

const decode = (
  payloads: readonly (OpenAIResponsesEvent | string)[],
  ending: { error: unknown } | 'complete' = 'complete',
  options: OpenAIResponsesOptions = {},
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
      code: 'rate_limit_exceeded',
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
    expect(error).toBeInstanceOf(ProviderPayloadError);
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
