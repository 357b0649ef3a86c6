// The Anthropic Messages decoder on its own, through decodeAll (no RxJS): the mapping of each event type, the
// payloads it cannot read, the finish at message_stop, and the reading of SDK errors.
import {
  type AnthropicStreamEvent,
  decodeAll,
  ProviderError,
  ProviderPayloadError,
} from 'cleanturn/providers';
import { delta, finish, text, usage } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import { createAnthropicDecoder } from '../../src/providers/anthropicMessages.js';

const decode = (payloads: unknown[], ending: { error: unknown } | 'complete' = 'complete') =>
  decodeAll<AnthropicStreamEvent>(
    { name: 'anthropicMessages' },
    (sink) => createAnthropicDecoder(sink),
    payloads as AnthropicStreamEvent[],
    ending,
  );

// biome-ignore format: a table of payloads
const e = {
  start: { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 10, output_tokens: 1 } } },
  text0: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  hi: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } },
  stop0: { type: 'content_block_stop', index: 0 },
  tool1: { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} } },
  args1: { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } },
  stop1: { type: 'content_block_stop', index: 1 },
  delta: { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } },
  end: { type: 'message_stop' },
} as const;

describe('the Anthropic decoder, without RxJS', () => {
  it('maps a whole message, the finish at message_stop', () => {
    const { events, error } = decode([
      e.start,
      e.text0,
      e.hi,
      e.stop0,
      e.tool1,
      e.args1,
      e.stop1,
      e.delta,
      e.end,
    ]);
    expect(error).toBeUndefined();
    expect(events).toEqual([
      usage(10, 1),
      text('Hi'),
      delta(1, '', { id: 'toolu_1', name: 'f' }),
      delta(1, '{"a":1}'),
      usage(10, 5),
      finish('tool-calls', 'end_turn'),
    ]);
  });

  it('reads decimal-string indexes', () => {
    const tool = { ...e.tool1, index: '1' };
    const args = { ...e.args1, index: '1' };
    const { events } = decode([e.start, tool, args, { ...e.stop1, index: '1' }, e.end]);
    expect(events.filter((x) => x.type === 'tool-call-delta')).toEqual([
      delta(1, '', { id: 'toolu_1', name: 'f' }),
      delta(1, '{"a":1}'),
    ]);
  });

  it('holds no finish without message_stop: a message_delta alone is not the end', () => {
    const { events, error } = decode([e.start, e.text0, e.hi, e.stop0, e.delta]);
    expect(error).toBeUndefined();
    expect(events).toEqual([usage(10, 1), text('Hi'), usage(10, 5)]);
  });

  it('ignores everything after message_stop, and a source error after it', () => {
    const after = [e.end, { type: 'message_start', message: { id: 'msg_2' } }, e.hi];
    const { events, error } = decode([e.start, e.text0, e.hi, ...after], { error: new Error('reset') });
    expect(error).toBeUndefined();
    expect(events).toEqual([usage(10, 1), text('Hi'), finish('other')]);
  });

  it('the finish table: the last stop reason wins; a call turns end_turn into tool-calls, not max_tokens', () => {
    const stop = (reason: string) => ({ type: 'message_delta', delta: { stop_reason: reason } });
    const last = (payloads: unknown[]) => decode([...payloads, e.end]).events.at(-1);
    expect(last([stop('max_tokens'), stop('end_turn')])).toEqual(finish('stop', 'end_turn'));
    expect(last([e.tool1, stop('end_turn')])).toEqual(finish('tool-calls', 'end_turn'));
    expect(last([e.tool1, stop('max_tokens')])).toEqual(finish('length', 'max_tokens'));
    expect(last([e.tool1, stop('pause_turn')])).toEqual(finish('other', 'pause_turn'));
    expect(last([stop('refusal')])).toEqual(finish('content-filter', 'refusal'));
    expect(last([stop('model_context_window_exceeded')])).toEqual(
      finish('length', 'model_context_window_exceeded'),
    );
    expect(last([stop('compaction')])).toEqual(finish('other', 'compaction'));
    expect(last([e.tool1])).toEqual(finish('tool-calls'));
  });

  // biome-ignore format: a table of payloads
  it.each([
    ['a delta for a block never opened', [e.start, e.args1], 'unknown-reference', 'index'],
    ['a stop for a block never opened', [e.start, e.stop0], 'unknown-reference', 'index'],
    ['a text delta before its block starts', [e.hi], 'unknown-reference', 'index'],
    ['a delta without an index', [e.text0, { ...e.hi, index: undefined }], 'invalid-field', 'index'],
    ['a negative index', [{ ...e.text0, index: -1 }], 'invalid-field', 'index'],
    ['an index that is not decimal', [{ ...e.text0, index: '0x1' }], 'invalid-field', 'index'],
    ['a tool_use without a name', [{ ...e.tool1, content_block: { type: 'tool_use', id: 'toolu_1' } }], 'invalid-field', 'content_block.name'],
    ['a tool_use with an empty name', [{ ...e.tool1, content_block: { type: 'tool_use', id: 'toolu_1', name: '' } }], 'invalid-field', 'content_block.name'],
    ['a tool_use with a numeric id', [{ ...e.tool1, content_block: { type: 'tool_use', id: 7, name: 'f' } }], 'invalid-field', 'content_block.id'],
    ['a tool_use whose input is a string', [{ ...e.tool1, content_block: { type: 'tool_use', id: 't', name: 'f', input: '{}' } }], 'invalid-field', 'content_block.input'],
    ['partial_json as an object', [e.tool1, { ...e.args1, delta: { type: 'input_json_delta', partial_json: { a: 1 } } }], 'invalid-field', 'delta.partial_json'],
    ['text as a number', [e.text0, { ...e.hi, delta: { type: 'text_delta', text: 1 } }], 'invalid-field', 'delta.text'],
    ['a block start without a content_block', [{ type: 'content_block_start', index: 0 }], 'invalid-field', 'content_block.type'],
    ['a delta without a delta', [e.text0, { type: 'content_block_delta', index: 0 }], 'invalid-field', 'delta.type'],
    ['an event without a type', [{ message: {} }], 'invalid-field', 'type'],
    ['a numeric stop_reason', [{ type: 'message_delta', delta: { stop_reason: 1 } }], 'invalid-field', 'delta.stop_reason'],
  ] as const)('%s: ProviderPayloadError %s naming %s', (_what, payloads, code, field) => {
    const { error } = decode([...payloads]);
    expect(error).toBeInstanceOf(ProviderPayloadError);
    expect(error).toMatchObject({ code, field, operator: 'anthropicMessages', retryable: code === 'unknown-reference' });
  });

  it('a server tool block and other delta types at open blocks are not calls and not text', () => {
    const server = {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'server_tool_use', id: 's', name: 'web_search' },
    };
    const input = {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: '{"q":1}' },
    };
    const thinking = {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'thinking', thinking: '' },
    };
    const thought = {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'thinking_delta', thinking: 'hm' },
    };
    const { events, error } = decode([
      server,
      input,
      { type: 'content_block_stop', index: 0 },
      thinking,
      thought,
      e.end,
    ]);
    expect(error).toBeUndefined();
    expect(events).toEqual([finish('other')]);
  });

  it('another block at an open index, or another message, is a spliced stream', () => {
    expect(decode([e.text0, e.tool1, { ...e.tool1, index: 0 }]).error).toMatchObject({
      code: 'spliced_stream',
    });
    expect(decode([e.start, { type: 'message_start', message: { id: 'msg_2' } }]).error).toMatchObject({
      code: 'spliced_stream',
      retryable: true,
    });
    expect(decode([e.start, { type: 'message_start', message: {} }, e.end]).error).toBeUndefined();
  });

  it('reads an SDK APIError into a ProviderError, and keeps other source errors', () => {
    const overloaded = Object.assign(new Error('529'), {
      status: 529,
      error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    });
    const { error } = decode([e.start], { error: overloaded });
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      code: 'overloaded_error',
      status: 529,
      retryable: true,
      message: 'anthropic-messages: Overloaded',
      cause: overloaded,
    });
    const quota = Object.assign(new Error('400'), {
      status: 400,
      error: { error: { type: 'invalid_tool_error' } },
    });
    expect(decode([], { error: quota }).error).toMatchObject({
      retryable: false,
      code: 'invalid_tool_error',
    });
    const reset = new Error('terminated');
    expect(decode([e.start], { error: reset }).error).toBe(reset);
    expect(decode([], { error: 'not an Error' }).error).toBe('not an Error');
  });
});
