// The Anthropic Messages decoder on its own, through decodeAll (no RxJS): the mapping of each event type, the
// payloads it cannot read, the finish at message_stop, and the reading of SDK errors.
import { ProviderError } from 'cleanturn/providers';
import { delta, finish, reasoning, text, usage } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import type { AnthropicStreamEvent } from '../../src/providers/anthropicMessages.js';
import { AnthropicMessagesDecoder } from '../../src/providers/anthropicMessages.js';
import { decodeAll } from '../../src/providers/decodeWith.js';

const decode = (payloads: unknown[], ending: { error: unknown } | 'complete' = 'complete') =>
  decodeAll<AnthropicStreamEvent>(
    { name: 'anthropicMessages' },
    (sink) => new AnthropicMessagesDecoder(sink),
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
      {
        ...finish('tool-calls', 'end_turn'),
        responseId: 'msg_1',
        output: {
          format: 'anthropic-messages',
          content: [
            { type: 'text', text: 'Hi' },
            { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
          ],
        },
      },
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
    expect(events).toEqual([
      usage(10, 1),
      text('Hi'),
      {
        ...finish('other'),
        responseId: 'msg_1',
        output: { format: 'anthropic-messages', content: [{ type: 'text', text: 'Hi' }] },
      },
    ]);
  });

  it('the finish table: the last stop reason wins; a call turns end_turn into tool-calls, not max_tokens', () => {
    const stop = (reason: string) => ({ type: 'message_delta', delta: { stop_reason: reason } });
    const last = (payloads: unknown[]) => {
      const event = decode([...payloads, e.end]).events.at(-1) as unknown as Record<string, unknown>;
      const { output: _output, ...rest } = event;
      return rest;
    };
    expect(last([stop('max_tokens'), stop('end_turn')])).toEqual(finish('stop', 'end_turn'));
    expect(last([e.tool1, stop('end_turn')])).toEqual(finish('tool-calls', 'end_turn'));
    expect(last([e.tool1, stop('max_tokens')])).toEqual(finish('length', 'max_tokens'));
    expect(last([e.tool1, stop('pause_turn')])).toEqual({ ...finish('other', 'pause_turn'), paused: true });
    expect(last([stop('refusal')])).toEqual(finish('content-filter', 'refusal'));
    expect(last([stop('model_context_window_exceeded')])).toEqual(
      finish('length', 'model_context_window_exceeded'),
    );
    expect(last([stop('compaction')])).toEqual({ ...finish('other', 'compaction'), paused: true });
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
  ] as const)('%s: ProviderError %s naming %s', (_what, payloads, code, field) => {
    const { error } = decode([...payloads]);
    expect(error).toBeInstanceOf(ProviderError);
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
    expect(events).toEqual([
      reasoning('hm'),
      {
        ...finish('other'),
        output: {
          format: 'anthropic-messages',
          content: [
            { type: 'server_tool_use', id: 's', name: 'web_search', input: { q: 1 } },
            { type: 'thinking', thinking: 'hm' },
          ],
        },
      },
    ]);
  });

  it('another block at an open index, or another message, is a spliced stream', () => {
    expect(decode([e.text0, e.tool1, { ...e.tool1, index: 0 }]).error).toMatchObject({
      code: 'upstream',
      upstreamCode: 'spliced_stream',
    });
    expect(decode([e.start, { type: 'message_start', message: { id: 'msg_2' } }]).error).toMatchObject({
      code: 'upstream',
      upstreamCode: 'spliced_stream',
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
      code: 'upstream',
      upstreamCode: 'overloaded_error',
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
      code: 'upstream',
      upstreamCode: 'invalid_tool_error',
    });
    const reset = new Error('terminated');
    expect(decode([e.start], { error: reset }).error).toBe(reset);
    expect(decode([], { error: 'not an Error' }).error).toBe('not an Error');
  });
});

describe('the Anthropic decoder: reasoning, the output, the response id', () => {
  // biome-ignore format: a table of payloads
  const t = {
    thinking0: { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
    think: (text: string) => ({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: text } }),
    sign: (signature: string) => ({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } }),
    redacted: (index: number, data: string) => ({ type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data } }),
    text: (index: number, block: object = { type: 'text', text: '' }) => ({ type: 'content_block_start', index, content_block: block }),
    cite: (index: number, citation: unknown) => ({ type: 'content_block_delta', index, delta: { type: 'citations_delta', citation } }),
    words: (index: number, text: string) => ({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }),
    tool: (index: number, id: string) => ({ type: 'content_block_start', index, content_block: { type: 'tool_use', id, name: 'f', input: {} } }),
    args: (index: number, json: string) => ({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json } }),
    stop: (index: number) => ({ type: 'content_block_stop', index }),
    reason: (stop_reason: string) => ({ type: 'message_delta', delta: { stop_reason }, usage: { output_tokens: 9 } }),
  };
  const outputOf = (events: readonly unknown[]) =>
    (events.at(-1) as { output?: { format: string; content: unknown[] } }).output;

  it('thinking deltas are reasoning events; the block keeps its text and the signature, before the call it led to', () => {
    const { events, error } = decode([
      e.start,
      t.thinking0,
      t.think('Damaged, '),
      t.think(''),
      t.think('so refund.'),
      t.sign('sig-A'),
      t.stop(0),
      t.tool(1, 'toolu_1'),
      t.args(1, '{"a":1}'),
      t.stop(1),
      t.reason('tool_use'),
      e.end,
    ]);
    expect(error).toBeUndefined();
    expect(events.filter((x) => x.type === 'reasoning')).toEqual([
      reasoning('Damaged, '),
      reasoning('so refund.'),
    ]);
    expect(events.some((x) => x.type === 'text')).toBe(false);
    expect(outputOf(events)).toEqual({
      format: 'anthropic-messages',
      content: [
        { type: 'thinking', thinking: 'Damaged, so refund.', signature: 'sig-A' },
        { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
      ],
    });
  });

  it('a later signature_delta replaces the signature, as the SDK accumulates it', () => {
    const { events } = decode([
      e.start,
      t.thinking0,
      t.think('x'),
      t.sign('first'),
      t.sign('second'),
      t.stop(0),
      e.end,
    ]);
    expect(outputOf(events)?.content).toEqual([{ type: 'thinking', thinking: 'x', signature: 'second' }]);
  });

  it('redacted_thinking has nothing to show: no event, its data kept as it came', () => {
    const { events } = decode([
      e.start,
      t.redacted(0, 'EmwKAhgB'),
      t.stop(0),
      t.text(1),
      t.words(1, 'Done.'),
      t.stop(1),
      e.end,
    ]);
    expect(events.slice(0, -1)).toEqual([usage(10, 1), text('Done.')]);
    expect(outputOf(events)?.content).toEqual([
      { type: 'redacted_thinking', data: 'EmwKAhgB' },
      { type: 'text', text: 'Done.' },
    ]);
  });

  it('citations_delta appends to the text block citations in order, after those its start carried', () => {
    const first = { type: 'char_location', cited_text: 'a', document_index: 0 };
    const second = { type: 'char_location', cited_text: 'b', document_index: 1 };
    const started = t.text(0, { type: 'text', text: '', citations: [first] });
    const payloads = [
      e.start,
      started,
      t.words(0, 'A'),
      t.cite(0, second),
      t.words(0, 'B'),
      t.stop(0),
      e.end,
    ];
    const before = structuredClone(payloads);
    const { events } = decode(payloads);
    expect(outputOf(events)?.content).toEqual([{ type: 'text', text: 'AB', citations: [first, second] }]);
    expect(payloads).toEqual(before); // the payloads are read, never written
  });

  it('text and thinking a start block already carries count, as events and in the block', () => {
    const { events } = decode([
      { ...t.thinking0, content_block: { type: 'thinking', thinking: 'Known. ', signature: 'sig' } },
      t.stop(0),
      t.text(1, { type: 'text', text: 'Hello ' }),
      t.words(1, 'there.'),
      t.stop(1),
      e.end,
    ]);
    expect(events.slice(0, -1)).toEqual([reasoning('Known. '), text('Hello '), text('there.')]);
    expect(outputOf(events)?.content).toEqual([
      { type: 'thinking', thinking: 'Known. ', signature: 'sig' },
      { type: 'text', text: 'Hello there.' },
    ]);
  });

  it('server tools are kept as blocks (their input streamed), never released as calls; end_turn stays stop', () => {
    const server = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} };
    const result = {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: [
        {
          type: 'web_search_result',
          title: 'Returns',
          url: 'https://example.com',
          encrypted_content: 'Eq',
          page_age: null,
        },
      ],
    };
    const { events } = decode([
      e.start,
      t.text(0, server),
      t.args(0, ''),
      t.args(0, '{"query":'),
      t.args(0, '"returns"}'),
      t.stop(0),
      t.text(1, result),
      t.stop(1),
      t.reason('end_turn'),
      e.end,
    ]);
    expect(events.some((x) => x.type === 'tool-call-delta')).toBe(false);
    expect(events.at(-1)).toMatchObject({ type: 'finish', reason: 'stop', raw: 'end_turn' });
    expect(outputOf(events)?.content).toEqual([{ ...server, input: { query: 'returns' } }, result]);
  });

  it('a block of a type it does not know is kept as its start sent it; its deltas of unknown types are ignored', () => {
    const future = { type: 'memory_recall', memory_id: 'mem_1', nested: { a: [1, 2] } };
    const { events, error } = decode([
      e.start,
      t.text(0, future),
      { type: 'content_block_delta', index: 0, delta: { type: 'memory_delta', detail: 'x' } },
      t.stop(0),
      e.end,
    ]);
    expect(error).toBeUndefined();
    expect(outputOf(events)?.content).toEqual([future]);
  });

  it('compaction_delta sets the compaction block content and encrypted_content (the final values)', () => {
    const { events } = decode([
      e.start,
      t.text(0, { type: 'compaction', content: null }),
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'compaction_delta', content: 'Summary.', encrypted_content: 'Eu' },
      },
      t.stop(0),
      t.reason('compaction'),
      e.end,
    ]);
    expect(events.at(-1)).toMatchObject({ reason: 'other', paused: true, raw: 'compaction' });
    expect(outputOf(events)?.content).toEqual([
      { type: 'compaction', content: 'Summary.', encrypted_content: 'Eu' },
    ]);
  });

  it('the blocks are in index order, whatever order they opened in', () => {
    const { events } = decode([e.start, t.text(1), t.words(1, 'B'), t.text(0), t.words(0, 'A'), e.end]);
    expect(outputOf(events)?.content).toEqual([
      { type: 'text', text: 'A' },
      { type: 'text', text: 'B' },
    ]);
  });

  it('the finish carries the message id as responseId, and none when message_start had none', () => {
    expect(decode([e.start, e.end]).events.at(-1)).toMatchObject({ responseId: 'msg_1' });
    expect(decode([{ type: 'message_start', message: {} }, e.end]).events.at(-1)).not.toHaveProperty(
      'responseId',
    );
  });

  it('each run has its own output, and the output shares no object with another run', () => {
    const payloads = [e.start, e.text0, e.hi, e.stop0, e.end];
    const one = outputOf(decode(payloads).events);
    const two = outputOf(decode(payloads).events);
    expect(one).toEqual(two);
    expect(one).not.toBe(two);
    expect(one?.content[0]).not.toBe(two?.content[0]);
    expect(one?.content[0]).not.toBe(e.text0.content_block);
  });

  it('usage: cache reads are cachedInputTokens, thinking_tokens are reasoningTokens', () => {
    const { events } = decode([
      {
        type: 'message_start',
        message: {
          id: 'msg_1',
          usage: {
            input_tokens: 5,
            cache_creation_input_tokens: 10,
            cache_read_input_tokens: 200,
            output_tokens: 1,
          },
        },
      },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: 90, output_tokens_details: { thinking_tokens: 60 } },
      },
      e.end,
    ]);
    expect(events.filter((x) => x.type === 'usage')).toEqual([
      { type: 'usage', inputTokens: 215, outputTokens: 1, cachedInputTokens: 200 },
      { type: 'usage', inputTokens: 215, outputTokens: 90, cachedInputTokens: 200, reasoningTokens: 60 },
    ]);
  });

  // biome-ignore format: a table of payloads
  it.each([
    ['a thinking_delta whose thinking is a number', [t.thinking0, { ...t.think(''), delta: { type: 'thinking_delta', thinking: 1 } }], 'delta.thinking'],
    ['a signature_delta whose signature is an object', [t.thinking0, { ...t.sign(''), delta: { type: 'signature_delta', signature: {} } }], 'delta.signature'],
    ['a citations_delta whose citation is a string', [t.text(0), t.cite(0, 'a')], 'delta.citation'],
    ['a redacted_thinking block whose data is a number', [t.redacted(0, 7 as unknown as string)], 'content_block.data'],
    ['a compaction_delta whose content is a number', [t.text(0, { type: 'compaction', content: null }), { type: 'content_block_delta', index: 0, delta: { type: 'compaction_delta', content: 3 } }], 'delta.content'],
    ['a usage whose thinking_tokens is a string', [{ type: 'message_delta', delta: {}, usage: { output_tokens_details: { thinking_tokens: '6' } } }], 'usage.output_tokens_details.thinking_tokens'],
  ] as const)('%s: invalid-field', (_what, payloads, field) => {
    const { error } = decode([...payloads]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'invalid-field', field, retryable: false });
  });
});
