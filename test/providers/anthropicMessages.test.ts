// anthropicMessages(): every fixture in test/fixtures/anthropic, one per trap of wire-formats.md §3, through
// the adapter and assembleToolCalls (and the clean turn); error classification; the standard operator checks.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  assembleToolCalls,
  CleanturnError,
  effectKey,
  MissingFinishError,
  requireFinish,
  retryAsEvents,
  ToolCallAssemblyError,
} from 'cleanturn';
import {
  type AnthropicStreamEvent,
  anthropicMessages,
  type PayloadProblem,
  ProviderError,
  ProviderPayloadError,
} from 'cleanturn/providers';
import { call, delta, finish, refundArgs, text, usage } from 'cleanturn/testing';
import { concat, defer, from, Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { collect } from '../support/collect.js';
import { attempts, type FixtureCase, fixtureChecks, retriedTurn } from '../support/providerTurns.js';
import { readSseJson } from '../support/sse.js';
import { standardChecks } from '../support/standardChecks.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/anthropic/', import.meta.url));

/** The parsed events of a fixture file. */
const fixture = (name: string) => readSseJson(`${dir}${name}`) as AnthropicStreamEvent[];

const refund = (id: string) => call(id, 'issue_refund', refundArgs);
const T1 = 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP';

const retryable = (code: string) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderError);
  expect(error).toMatchObject({ provider: 'anthropic-messages', code, retryable: true });
};

/** A payload the adapter cannot read: a ProviderPayloadError naming the field (only unknown-reference retries). */
const unreadable = (code: PayloadProblem, field: string) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderPayloadError);
  expect(error).toMatchObject({
    operator: 'anthropicMessages',
    code,
    field,
    retryable: code === 'unknown-reference',
  });
};

// biome-ignore format: a table of fixtures
const cases: FixtureCase[] = [
  {
    file: 'text-and-tool.sse',
    trap: 'text, a ping, a tool_use whose first fragment is empty and whose arguments arrive in three pieces',
    events: [usage(412, 2), text('Checking order'), text(' ORD-7781. '), refund(T1), usage(412, 58), finish('tool-calls', 'tool_use')],
    turn: { text: 'Checking order ORD-7781. ', calls: [T1] },
  },
  {
    file: 'no-arg-tool.sse',
    trap: 'a tool without arguments: every fragment empty means {}',
    events: [usage(412, 2), text('Let me list your orders.'), usage(412, 31), call('toolu_01NoArgs5kLm2Q8rT7vW3xYz', 'list_orders', {}), finish('tool-calls', 'tool_use')],
    turn: { text: 'Let me list your orders.', calls: ['toolu_01NoArgs5kLm2Q8rT7vW3xYz'] },
  },
  {
    file: 'whole-args-first.sse',
    trap: 'the whole arguments in the first fragment',
    events: [usage(412, 2), refund('toolu_01WholeA9bC8dE7fG6hJ5kL'), usage(412, 40), finish('tool-calls', 'tool_use')],
    turn: { text: '', calls: ['toolu_01WholeA9bC8dE7fG6hJ5kL'] },
  },
  {
    file: 'parallel-calls.sse',
    trap: 'two parallel calls: tool_use blocks at indexes 1 and 2 after a text block',
    events: [
      usage(412, 2), text('Looking up both orders.'),
      call('toolu_01Par1aaaaaaaaaaaaaaaaaaa', 'lookup_order', { order_id: 'ORD-7781' }),
      call('toolu_01Par2bbbbbbbbbbbbbbbbbbb', 'lookup_order', { order_id: 'ORD-7782' }),
      usage(412, 77), finish('tool-calls', 'tool_use'),
    ],
    turn: { text: 'Looking up both orders.', calls: ['toolu_01Par1aaaaaaaaaaaaaaaaaaa', 'toolu_01Par2bbbbbbbbbbbbbbbbbbb'] },
  },
  {
    file: 'overloaded-after-text.sse',
    trap: 'event: error with overloaded_error after some text: a retryable ProviderError',
    events: [usage(412, 2), text('Checking order'), text(' ORD-7781. Refunding the dam')],
    error: retryable('overloaded_error'),
  },
  {
    file: 'invalid-request-error.sse',
    trap: 'an in-stream invalid_request_error: not retryable',
    events: [usage(412, 2)],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: 'invalid_request_error', retryable: false });
      expect((error as Error).message).toBe('anthropic-messages: messages.1.content.0: tool_use ids must be unique');
    },
  },
  {
    file: 'duplicate-message-start.sse',
    trap: 'a duplicated message_start with the same id is ignored',
    events: [usage(412, 2), text('Refund started.'), usage(412, 9), finish('stop', 'end_turn')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'spliced-message-start.sse',
    trap: 'a spliced stream: another message_start with a new id while a tool_use block is open',
    events: [usage(412, 2), text('Checking order ORD-7781. ')],
    error: retryable('spliced_stream'),
  },
  {
    file: 'duplicate-tool-start.sse',
    trap: 'a duplicated content_block_start of the same tool_use block is ignored',
    events: [usage(412, 2), refund(T1), usage(412, 40), finish('tool-calls', 'tool_use')],
    turn: { text: '', calls: [T1] },
  },
  {
    file: 'unicode-split.sse',
    trap: 'unicode split across deltas: a combining mark, a ZWJ emoji, and \\u escapes split across partial_json',
    events: [
      usage(412, 2), text('Refund for Zoe'), text('\u0308 \u{1F469}'), text('\u200d\u{1F4BB} done. 注文'), text('番号 ORD-7781.'),
      call('toolu_01Unicode7hJ8kL9mN0pQ1rS2', 'add_note', { order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' }), usage(412, 44),
      finish('tool-calls', 'tool_use'),
    ],
    turn: { text: 'Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} done. 注文番号 ORD-7781.', calls: ['toolu_01Unicode7hJ8kL9mN0pQ1rS2'] },
  },
  {
    file: 'crlf.sse',
    trap: 'CRLF framing',
    events: [usage(412, 2), text('Refund started.'), usage(412, 9), finish('stop', 'end_turn')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'missing-optional-fields.sse',
    trap: 'data-only framing (no event: lines) and missing optional fields (cache counts, caller, stop_sequence)',
    events: [usage(97, 1), text('One moment.'), call('toolu_01MinimalCallQwErTyUiOpAs', 'lookup_order', { order_id: 'ORD-7781' }), usage(97, 25), finish('tool-calls', 'tool_use')],
    turn: { text: 'One moment.', calls: ['toolu_01MinimalCallQwErTyUiOpAs'] },
  },
  {
    file: 'max-tokens-mid-call.sse',
    trap: 'max_tokens in the middle of a call: the cut arguments are a retryable ToolCallAssemblyError',
    events: [usage(412, 2), usage(412, 1024)],
    error: (error) => {
      expect(error).toBeInstanceOf(ToolCallAssemblyError);
      expect(error).toMatchObject({ problem: 'invalid-json', id: 'toolu_01CutOffArgsZxCvBnMaSdFg', argsText: '{"order_id":"ORD-7781","amo', retryable: true });
    },
  },
  {
    file: 'pause-turn.sse',
    trap: 'pause_turn after a server tool: its input is not a client call; the finish is other',
    events: [usage(412, 2), text('Let me check the return policy.'), usage(412, 120), finish('other', 'pause_turn')],
    turn: { text: 'Let me check the return policy.', calls: [] },
  },
  {
    file: 'thinking.sse',
    trap: 'thinking and signature deltas are not answer text',
    events: [usage(412, 2), text('Refund started.'), usage(412, 64), finish('stop', 'end_turn')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'truncated.sse',
    trap: 'the connection closed before message_stop: no finish',
    events: [usage(412, 2), text('Refund started.'), usage(412, 9)],
  },
  {
    file: 'tool-use-end-turn.sse',
    trap: 'a tool call in a message that ends with end_turn: the call decides',
    events: [usage(412, 2), refund('toolu_01EndTurnCallHjKlZxCvBn'), usage(412, 40), finish('tool-calls', 'end_turn')],
    turn: { text: '', calls: ['toolu_01EndTurnCallHjKlZxCvBn'] },
  },
  {
    file: 'refusal.sse',
    trap: 'refusal is content-filter',
    events: [usage(412, 2), text("I can't help with that."), usage(412, 12), finish('content-filter', 'refusal')],
    turn: { text: "I can't help with that.", calls: [] },
  },
  {
    file: 'cumulative-usage.sse',
    trap: 'cumulative usage: message_delta repeats input and cache counts; null keeps the last value',
    events: [usage(343, 1), text('Refund started.'), usage(343, 5), usage(361, 9), finish('stop', 'end_turn')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'unknown-types.sse',
    trap: 'unknown event and delta types are ignored',
    events: [usage(412, 2), text('Refund started.'), usage(412, 9), finish('stop', 'end_turn')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'compat-string-index.sse',
    trap: 'decimal-string indexes (a proxy): the tool_use block at "1" is read, not dropped under a tool-calls finish',
    events: [usage(412, 2), text('Checking order'), text(' ORD-7781. '), refund('toolu_01StrIdx7Kd2Pq9Wm4Xc8Rt5'), usage(412, 58), finish('tool-calls', 'tool_use')],
    turn: { text: 'Checking order ORD-7781. ', calls: ['toolu_01StrIdx7Kd2Pq9Wm4Xc8Rt5'] },
  },
  {
    file: 'delta-unopened-block.sse',
    trap: 'input_json_delta for a block never opened (its start was lost): a retryable unknown-reference',
    events: [usage(412, 2), text('Checking order ORD-7781. ')],
    error: unreadable('unknown-reference', 'index'),
  },
  {
    file: 'stop-unopened-block.sse',
    trap: 'content_block_stop for a block never opened: a retryable unknown-reference',
    events: [usage(412, 2), text('Refund started.')],
    error: unreadable('unknown-reference', 'index'),
  },
  {
    file: 'tool-name-missing.sse',
    trap: 'a tool_use block without a name: invalid-field, not a nameless call',
    events: [usage(412, 2), text('Checking order ORD-7781. ')],
    error: unreadable('invalid-field', 'content_block.name'),
  },
  {
    file: 'compat-tool-name-number.sse',
    trap: 'a tool_use block whose name is a number: invalid-field',
    events: [usage(412, 2)],
    error: unreadable('invalid-field', 'content_block.name'),
  },
  {
    file: 'compat-partial-json-number.sse',
    trap: 'partial_json that is a number: invalid-field, never a call with {}',
    events: [usage(412, 2)],
    error: unreadable('invalid-field', 'delta.partial_json'),
  },
  {
    file: 'two-message-deltas.sse',
    trap: 'two message_delta events, the first without a stop reason: usage from both, the last reason',
    events: [usage(412, 2), text('Refund started.'), usage(412, 5), usage(412, 9), finish('stop', 'end_turn')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'after-message-stop.sse',
    trap: 'a second message after message_stop (the end marker) is ignored',
    events: [usage(412, 2), text('Refund started.'), usage(412, 9), finish('stop', 'end_turn')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'api-error-mid-call.sse',
    trap: 'an api_error while a call streams: retryable, and the cut call is never released',
    events: [usage(412, 2), text('Refunding now.')],
    error: retryable('api_error'),
  },
];

describe('anthropicMessages: fixtures', () => {
  fixtureChecks({
    cases,
    files: () => readdirSync(dir),
    read: fixture,
    adapter: () => anthropicMessages(),
    turnId,
  });

  it('the adapter alone finishes with length when max_tokens cuts a call', () => {
    const result = collect(from(fixture('max-tokens-mid-call.sse')).pipe(anthropicMessages()));
    expect(result.values.at(-1)).toEqual(finish('length', 'max_tokens'));
    expect(result.values.filter((e) => e.type === 'tool-call-delta')).toEqual([
      {
        type: 'tool-call-delta',
        index: 0,
        id: 'toolu_01CutOffArgsZxCvBnMaSdFg',
        name: 'issue_refund',
        argsDelta: '',
      },
      { type: 'tool-call-delta', index: 0, argsDelta: '{"order_id":"ORD-7781","amo' },
    ]);
  });

  it('a truncated stream is a retryable MissingFinishError with requireFinish', () => {
    const result = collect(
      from(fixture('truncated.sse')).pipe(anthropicMessages(), assembleToolCalls(), requireFinish()),
    );
    expect(result.error).toBeInstanceOf(MissingFinishError);
  });

  it('fragments carry the block index, with the id and name on the first one only', () => {
    const result = collect(from(fixture('parallel-calls.sse')).pipe(anthropicMessages()));
    const fragments = result.values.filter((e) => e.type === 'tool-call-delta');
    expect(fragments).toEqual([
      {
        type: 'tool-call-delta',
        index: 1,
        id: 'toolu_01Par1aaaaaaaaaaaaaaaaaaa',
        name: 'lookup_order',
        argsDelta: '',
      },
      { type: 'tool-call-delta', index: 1, argsDelta: '{"order_id":"ORD-7781"}' },
      {
        type: 'tool-call-delta',
        index: 2,
        id: 'toolu_01Par2bbbbbbbbbbbbbbbbbbb',
        name: 'lookup_order',
        argsDelta: '',
      },
      { type: 'tool-call-delta', index: 2, argsDelta: '{"order_' },
      { type: 'tool-call-delta', index: 2, argsDelta: 'id":"ORD-7782"}' },
    ]);
  });
});

describe('anthropicMessages: the help-desk retry', () => {
  it('an overloaded attempt, then a complete one: attempt 2 text only, one refund, one reset', () => {
    const states = collect(
      attempts(fixture('overloaded-after-text.sse'), fixture('text-and-tool.sse')).pipe(
        retriedTurn(anthropicMessages(), turnId),
      ),
    );
    expect(states.error).toBeUndefined();
    const turn = states.values.at(-1);
    expect(turn?.text).toBe('Checking order ORD-7781. ');
    expect(turn?.attempt).toBe(2);
    expect(turn?.toolCalls).toEqual([
      { ...refund(T1), attempt: 2, effectKey: effectKey(turnId, refund(T1)) },
    ]);
    expect(turn?.attempts.map((a) => [a.attempt, a.outcome, a.reason])).toEqual([
      [1, 'abandoned', 'anthropic-messages: Overloaded'],
      [2, 'completed', undefined],
    ]);
  });

  it('a spliced stream is retried as a whole, never merged', () => {
    const states = collect(
      attempts(fixture('spliced-message-start.sse'), fixture('text-and-tool.sse')).pipe(
        retriedTurn(anthropicMessages(), turnId),
      ),
    );
    const turn = states.values.at(-1);
    expect(turn?.text).toBe('Checking order ORD-7781. ');
    expect(turn?.toolCalls.map((k) => [k.id, k.attempt])).toEqual([[T1, 2]]);
  });

  it('an invalid request is not retried', () => {
    let subscriptions = 0;
    const result = collect(
      defer(() => {
        subscriptions++;
        return from(fixture('invalid-request-error.sse'));
      }).pipe(anthropicMessages(), assembleToolCalls(), requireFinish(), retryAsEvents({ count: 2 })),
    );
    expect(subscriptions).toBe(1);
    expect(result.error).toMatchObject({ retryable: false, code: 'invalid_request_error' });
  });
});

describe('anthropicMessages: errors', () => {
  const errorEvent = (type: string): AnthropicStreamEvent => ({
    type: 'error',
    error: { type, message: type },
  });
  const errorOf = (events: AnthropicStreamEvent[], options = {}) =>
    collect(from(events).pipe(anthropicMessages(options))).error;

  it.each([
    ['overloaded_error', true],
    ['api_error', true],
    ['rate_limit_error', true],
    ['timeout_error', true],
    ['conflict_error', true],
    ['a_type_from_the_future', true],
    ['invalid_tool_input_error', false],
    ['invalid_request_error', false],
    ['authentication_error', false],
    ['permission_error', false],
    ['not_found_error', false],
    ['request_too_large', false],
    ['billing_error', false],
  ])('%s: retryable %s', (type, expected) => {
    const error = errorOf([errorEvent(type)]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: type, retryable: expected, payload: errorEvent(type) });
  });

  it('an error event without details is still a retryable ProviderError', () => {
    expect(errorOf([{ type: 'error' }])).toMatchObject({ retryable: true, code: undefined });
  });

  it('the retryable option overrides the default, and undefined keeps it', () => {
    const options = {
      retryable: (e: { type: string | undefined }) => (e.type === 'api_error' ? false : undefined),
    };
    expect(errorOf([errorEvent('api_error')], options)).toMatchObject({ retryable: false });
    expect(errorOf([errorEvent('overloaded_error')], options)).toMatchObject({ retryable: true });
  });

  it('a retryable option that throws errors the stream with what it throws', () => {
    const thrown = new Error('the callback failed');
    const error = errorOf([errorEvent('api_error')], {
      retryable: () => {
        throw thrown;
      },
    });
    expect(error).toBe(thrown);
  });

  /** An error shaped like the SDK's `APIError`. */
  const sdkError = (status: number | undefined, body: unknown) =>
    Object.assign(new Error('sdk error'), { status, error: body });

  it.each([
    [
      'in-stream overloaded_error',
      undefined,
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      true,
    ],
    [
      'in-stream invalid_request_error',
      undefined,
      { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } },
      false,
    ],
    [
      'HTTP 529 overloaded',
      529,
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      true,
    ],
    ['HTTP 401 without a body', 401, undefined, false],
    ['HTTP 503 without a body', 503, undefined, true],
  ])("the SDK's APIError (%s) becomes a ProviderError", (_what, status, body, expected) => {
    const thrown = sdkError(status, body);
    const source = new Observable<AnthropicStreamEvent>((subscriber) => subscriber.error(thrown));
    const error = collect(source.pipe(anthropicMessages())).error;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: expected, status, payload: thrown });
  });

  it('other source errors (a connection reset) pass through unchanged', () => {
    const reset = Object.assign(new Error('terminated'), { status: undefined, error: undefined });
    const source = new Observable<AnthropicStreamEvent>((subscriber) => subscriber.error(reset));
    expect(collect(source.pipe(anthropicMessages())).error).toBe(reset);
  });

  it('an input that is not an event is a programming error, not retryable', () => {
    const error = errorOf(['{"type":"ping"}' as unknown as AnthropicStreamEvent]);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({ retryable: false });
    expect(errorOf([{} as AnthropicStreamEvent])).toMatchObject({ code: 'invalid-field', field: 'type' });
  });

  it('another tool_use at an open index with a different id is a spliced stream', () => {
    const start = (id: string): AnthropicStreamEvent => ({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id, name: 'issue_refund', input: {} },
    });
    expect(errorOf([start('toolu_a'), start('toolu_b')])).toMatchObject({
      code: 'spliced_stream',
      retryable: true,
    });
  });

  it('a tool_use block whose input arrives whole in content_block_start (a replay) keeps it', () => {
    const events: AnthropicStreamEvent[] = [
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 'toolu_r', name: 'issue_refund', input: refundArgs },
      },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' } },
      { type: 'message_stop' },
    ];
    const result = collect(from(events).pipe(anthropicMessages(), assembleToolCalls()));
    expect(result.values).toEqual([refund('toolu_r'), finish('tool-calls', 'tool_use')]);
  });

  it('nothing follows the finish: later events are ignored, a later source error completes the stream', () => {
    const later: AnthropicStreamEvent[] = [
      { type: 'message_start', message: { id: 'msg_other' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'more' } },
    ];
    const source = concat(
      from([...fixture('crlf.sse'), ...later]),
      throwError(() => new Error('terminated')),
    );
    const result = collect(source.pipe(anthropicMessages()));
    expect(result.values).toEqual([
      usage(412, 2),
      text('Refund started.'),
      usage(412, 9),
      finish('stop', 'end_turn'),
    ]);
    expect(result.completed).toBe(true);
  });

  it('stops a synchronous source at an error event', () => {
    let pulled = 0;
    function* events(): Generator<AnthropicStreamEvent> {
      for (const event of fixture('overloaded-after-text.sse')) {
        pulled++;
        yield event;
      }
      for (let i = 0; i < 10; i++) {
        pulled++;
        yield { type: 'ping' };
      }
    }
    collect(from(events()).pipe(anthropicMessages()));
    expect(pulled).toBe(fixture('overloaded-after-text.sse').length);
  });
});

describe('anthropicMessages: linear in the stream size', () => {
  it('forwards each fragment as it is, without re-joining (50,000 fragments)', () => {
    const pieces = Array.from({ length: 50_000 }, (_, i) => `"k${i}":${i},`);
    const events: AnthropicStreamEvent[] = [
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 'toolu_big', name: 'bulk', input: {} },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{' } },
      ...pieces.map(
        (p): AnthropicStreamEvent => ({
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: p },
        }),
      ),
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: '"end":true}' },
      },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' } },
      { type: 'message_stop' },
    ];
    const adapted = collect(from(events).pipe(anthropicMessages()));
    const fragments = adapted.values.filter((e) => e.type === 'tool-call-delta');
    expect(fragments.slice(2, 4).map((f) => f.argsDelta)).toEqual([pieces[0], pieces[1]]);
    const assembled = collect(from(events).pipe(anthropicMessages(), assembleToolCalls()));
    const bulk = assembled.values.find((e) => e.type === 'tool-call');
    expect(Object.keys((bulk as { args: object }).args)).toHaveLength(50_001);
  });
});

// biome-ignore format: an aligned value table
const sample: Record<'a' | 'b' | 'c', AnthropicStreamEvent> = {
  a: { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 10, output_tokens: 1 } } },
  b: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'list_orders', input: {} } },
  c: { type: 'message_stop' },
};
const sampleOut = {
  a: usage(10, 1),
  b: delta(0, '', { id: 'toolu_1', name: 'list_orders' }),
  c: finish('tool-calls'),
};

standardChecks<AnthropicStreamEvent>({
  name: 'anthropicMessages',
  make: () => anthropicMessages(),
  values: sample,
  expected: sampleOut,
});

describe('anthropicMessages: an error event, frame by frame', () => {
  it('errors at an error event and unsubscribes from the source', () =>
    new TestScheduler((actual, expected) => expect(actual).toEqual(expected)).run(
      ({ cold, expectObservable, expectSubscriptions }) => {
        const e: AnthropicStreamEvent = {
          type: 'error',
          error: { type: 'overloaded_error', message: 'Overloaded' },
        };
        const source = cold('-a-e-b-|', { ...sample, e });
        const expected = new ProviderError('anthropic-messages', 'Overloaded', {
          retryable: true,
          code: 'overloaded_error',
          payload: e,
        });
        expectObservable(source.pipe(anthropicMessages())).toBe('-a-#', sampleOut, expected);
        expectSubscriptions(source.subscriptions).toBe('^--!');
      },
    ));
});
