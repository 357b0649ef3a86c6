import { join } from 'node:path';
import {
  assembleToolCalls,
  CleanturnError,
  effectKey,
  MissingFinishError,
  type ProviderEvent,
  requireFinish,
  type TurnEvent,
} from 'cleanturn';
import {
  type OpenAIChatChunk,
  type OpenAIChatInput,
  openaiChat,
  ProviderError,
  ProviderPayloadError,
} from 'cleanturn/providers';
import { call, delta, finish, refundArgs, text, usage } from 'cleanturn/testing';
import { defer, from, Observable, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { collect } from '../support/collect.js';
import { attempts, type Expectation, expectationChecks, retriedTurn } from '../support/providerTurns.js';
import { readSseJson } from '../support/sse.js';
import { nothing, standardChecks } from '../support/standardChecks.js';

const fixtures = join(import.meta.dirname, '../fixtures/openai-chat');
const payloads = (name: string) => readSseJson(join(fixtures, name)) as OpenAIChatInput[];

const adapt = (inputs: readonly OpenAIChatInput[], operator = openaiChat()) =>
  collect(from(inputs).pipe(operator));
const assembled = (inputs: readonly OpenAIChatInput[]) =>
  collect(from(inputs).pipe(openaiChat(), assembleToolCalls()));

/** A chunk of choice 0 with the given delta and finish reason (the ignored fields left out). */
const chunk = (delta: object, finishReason: string | null = null, index = 0): OpenAIChatChunk => ({
  choices: [{ index, delta, finish_reason: finishReason }],
});
const content = (value: string) => chunk({ content: value });
const stop = (reason = 'stop') => chunk({}, reason);
const usageChunk = (prompt: number, completion: number): OpenAIChatChunk => ({
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion },
});
const toolDelta = (index: number, args: string, start?: { id: string; name: string }) =>
  chunk({
    tool_calls: [
      start === undefined
        ? { index, function: { arguments: args } }
        : { index, id: start.id, type: 'function', function: { name: start.name, arguments: args } },
    ],
  });
const errorPayload = (error: OpenAIChatChunk['error']): OpenAIChatChunk => ({ error });

const lookupArgs = { order_id: 'ORD-7781' };
const unicodeText = `Merci \u{1F64F} ! Le cafe\u0301 est offert, l'équipe 👩\u200d💻 rembourse 42 €. 注文を返金しました。`;

// biome-ignore format: a table of fixtures
const expectations: Record<string, Expectation> = {
  'text-and-call.sse': { events: [
    text('Checking order'), text(' ORD-7781. '), usage(187, 29),
    call('call_7Hq2mWbK9sXv4RtY1nCz0LdE', 'issue_refund', refundArgs), finish('tool-calls', 'tool_calls'),
  ] },
  'no-arg-tool.sse': { events: [
    usage(96, 11), call('call_Vb3nQ8rLk2Wz6YtP0sMd4HfA', 'list_open_orders', {}), finish('tool-calls', 'tool_calls'),
  ] },
  'whole-args-first-delta.sse': { events: [
    call('call_mz4k1q9d', 'lookup_order', lookupArgs), finish('tool-calls', 'tool_calls'),
  ] },
  'parallel-interleaved.sse': { events: [
    usage(233, 52),
    call('call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs', 'lookup_order', lookupArgs),
    call('call_G4hJ6kL8mN0pQ2rS4tU6vW8x', 'issue_refund', refundArgs),
    finish('tool-calls', 'tool_calls'),
  ] },
  'azure-empty-choices-prefix.sse': { events: [
    text('Your refund for'), text(' ORD-7781 is on its way.'), usage(58, 12), finish('stop'),
  ] },
  'usage-missing.sse': { events: [text('The refund'), text(' has started.'), finish('stop')] },
  'truncated-no-done.sse': { events: [text('Checking order ORD-7781. ')] },
  'tool-call-finish-stop.sse': { events: [
    usage(150, 19), call('call_Lp0oK9iJ8uH7yG6tF5rD4eS3', 'issue_refund', refundArgs), finish('tool-calls', 'stop'),
  ] },
  'in-stream-error-server.sse': {
    events: [text('Refunding the'), text(' dam')],
    error: {
      retryable: true,
      code: 'server_error',
      message: 'openai-chat: The server had an error while processing your request. Sorry about that!',
    },
  },
  'in-stream-error-invalid-request.sse': {
    events: [],
    error: { retryable: false, code: 'context_length_exceeded', message: expect.stringContaining('maximum context length') },
  },
  'unicode-split.sse': { events: [
    text('Merci \ud83d'), text('\ude4f ! Le cafe'), text("\u0301 est offert, l'équipe 👩"),
    text('\u200d💻 rembourse 42 €. 注文を'), text('返金しました。'),
    call('call_Uc0dE1fG2hI3jK4lM5nO6pQ7', 'issue_refund', { order_id: 'ORD-7781', note: 'Livre abîmé 📚 → ✓' }),
    finish('tool-calls', 'tool_calls'),
  ] },
  'crlf-framing.sse': { events: [
    text('Looking up ORD-7781.'), usage(120, 24),
    call('call_Wx1yZ2aB3cD4eF5gH6iJ7kL8', 'lookup_order', lookupArgs), finish('tool-calls', 'tool_calls'),
  ] },
  'missing-optional-fields.sse': { events: [
    text('One moment.'), call('call_Mn5bV6cX7zL8kJ9hG0fD1sA2', 'lookup_order', lookupArgs), finish('tool-calls', 'tool_calls'),
  ] },
  'duplicate-start-fields.sse': { events: [
    usage(201, 27), call('kQ3nV8xZp', 'issue_refund', refundArgs), finish('tool-calls', 'tool_calls'),
  ] },
  'refusal.sse': { events: [refusal("I'm sorry, I can't help with that.")] },
  'compat-arguments-object.sse': { events: [
    text('Refunding now.'), call('call_q7Tn2', 'issue_refund', refundArgs), finish('tool-calls', 'tool_calls'),
  ] },
  'compat-arguments-number.sse': {
    events: [],
    errorClass: ProviderPayloadError,
    error: {
      retryable: false, code: 'invalid-field', field: 'choices[0].delta.tool_calls[0].function.arguments',
      message: expect.stringContaining('got number'),
    },
  },
  'compat-error-string.sse': {
    events: [text('Let me check')],
    error: { retryable: true, code: undefined, message: 'openai-chat: upstream model timed out after 60s' },
  },
  'compat-error-object.sse': {
    events: [],
    error: { retryable: false, code: 'BadRequestError', status: 400, message: expect.stringContaining('maximum context length') },
  },
  'compat-choice-index-string.sse': { events: [text('Your refund for'), text(' ORD-7781 has started.'), finish('stop')] },
};

/** The finish of a refused answer: its message on the finish, never as text. */
function refusal(message: string): ProviderEvent {
  return { type: 'finish', reason: 'content-filter', raw: 'stop', refusal: message };
}

describe('openaiChat: every fixture', () => {
  expectationChecks({
    provider: 'openai-chat',
    dir: fixtures,
    expectations,
    read: payloads,
    adapter: () => openaiChat(),
  });

  it('unicode-split.sse: the text rebuilds whole once the fragments are joined', () => {
    const joined = assembled(payloads('unicode-split.sse'))
      .values.flatMap((event) => (event.type === 'text' ? [event.text] : []))
      .join('');
    expect(joined).toBe(unicodeText);
    expect(() => encodeURIComponent(joined)).not.toThrow(); // no lone surrogate is left
  });

  it('truncated-no-done.sse: without a finish, requireFinish makes the cut a retryable error', () => {
    const result = collect(
      from(payloads('truncated-no-done.sse')).pipe(openaiChat(), assembleToolCalls(), requireFinish()),
    );
    expect(result.error).toBeInstanceOf(MissingFinishError);
    expect((result.error as MissingFinishError).retryable).toBe(true);
  });

  it('parallel-interleaved.sse: fragments keep their index and arrive as sent, before assembly', () => {
    // prettier-ignore
    expect(adapt(payloads('parallel-interleaved.sse')).values).toEqual([
      delta(0, '', { id: 'call_R1a8Xq2Wm5Nv9Bt3Lc7Kp0Zs', name: 'lookup_order' }),
      delta(1, '', { id: 'call_G4hJ6kL8mN0pQ2rS4tU6vW8x', name: 'issue_refund' }),
      delta(1, '{"order_id": "ORD-'),
      delta(0, '{"order_id"'),
      delta(0, ': "ORD-7781"}'),
      delta(1, '7781", "amount": "full"}'),
      usage(233, 52),
      finish('tool-calls', 'tool_calls'),
    ]);
  });

  it('azure-empty-choices-prefix.sse: the empty-choices prefix chunk is not read as the usage chunk', () => {
    const events = adapt(payloads('azure-empty-choices-prefix.sse')).values;
    expect(events.filter((e) => e.type === 'usage')).toEqual([usage(58, 12)]);
    expect(events[0]).toEqual(text('Your refund for'));
  });
});

describe('openaiChat: the finish and the usage after it', () => {
  it('holds the finish until the usage chunk, so that usage comes first', () => {
    expect(adapt([content('Hi.'), stop(), usageChunk(10, 2), '[DONE]']).values).toEqual([
      text('Hi.'),
      usage(10, 2),
      finish('stop'),
    ]);
  });

  it('releases the held finish at [DONE] when there is no usage chunk', () => {
    const events: ProviderEvent[] = [];
    let doneSeen = false;
    from([content('Hi.'), stop(), '[DONE]' as const, content('ignored')])
      .pipe(
        tap((input) => {
          if (input === '[DONE]') doneSeen = true;
        }),
        openaiChat(),
      )
      .subscribe((event) => {
        if (event.type === 'finish') expect(doneSeen).toBe(true);
        events.push(event);
      });
    expect(events).toEqual([text('Hi.'), finish('stop')]);
  });

  it('releases the held finish when the source completes ([DONE] dropped, no usage)', () => {
    const result = adapt([content('Hi.'), stop()]);
    expect(result.values).toEqual([text('Hi.'), finish('stop')]);
    expect(result.completed).toBe(true);
  });

  it('drops the held finish when the source errors before the stream ended: the attempt failed', () => {
    const reset = new Error('connection reset');
    const result = collect(
      new Observable<OpenAIChatInput>((s) => {
        s.next(content('Hi.'));
        s.next(stop());
        s.error(reset);
      }).pipe(openaiChat()),
    );
    expect(result.values).toEqual([text('Hi.')]);
    expect(result.error).toBe(reset);
  });

  it('completes instead of erroring when the source errors after the finish: a finished attempt stays finished', () => {
    const result = collect(
      new Observable<OpenAIChatInput>((s) => {
        s.next(stop());
        s.next(usageChunk(3, 1));
        s.error(new TypeError('terminated'));
      }).pipe(openaiChat()),
    );
    expect(result.values).toEqual([usage(3, 1), finish('stop')]);
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
  });

  it('drops the held finish when an error payload follows the finish_reason', () => {
    const result = adapt([content('Hi.'), stop(), errorPayload({ message: 'boom', type: 'server_error' })]);
    expect(result.values).toEqual([text('Hi.')]);
    expect(result.error).toBeInstanceOf(ProviderError);
  });

  it('ignores everything after the finish was released', () => {
    expect(
      adapt([stop(), usageChunk(1, 1), content('late'), usageChunk(9, 9), stop('length')]).values,
    ).toEqual([usage(1, 1), finish('stop')]);
  });

  it('with usage on every chunk (continuous usage stats), releases the finish with the usage of its chunk', () => {
    const withUsage = (c: OpenAIChatChunk, p: number, o: number) => ({
      ...c,
      usage: { prompt_tokens: p, completion_tokens: o },
    });
    expect(adapt([withUsage(content('Hi'), 5, 1), withUsage(stop(), 5, 2), usageChunk(5, 2)]).values).toEqual(
      [text('Hi'), usage(5, 1), usage(5, 2), finish('stop')],
    );
  });

  it('a fragment in the finish chunk itself comes before the finish', () => {
    const last = chunk({ tool_calls: [{ index: 0, function: { arguments: '}' } }] }, 'tool_calls');
    expect(adapt([toolDelta(0, '{', { id: 'c1', name: 'f' }), last]).values).toEqual([
      delta(0, '{', { id: 'c1', name: 'f' }),
      delta(0, '}'),
      finish('tool-calls', 'tool_calls'),
    ]);
  });

  it('emits no finish when the stream never sent a finish_reason', () => {
    const result = adapt([content('Refunding the dam'), '[DONE]']);
    expect(result.values).toEqual([text('Refunding the dam')]);
    expect(result.completed).toBe(true);
  });
});

describe('openaiChat: finish reasons', () => {
  const call0 = toolDelta(0, '{}', { id: 'c1', name: 'lookup_order' });
  // biome-ignore format: a table
  const table: [string, OpenAIChatInput[], ProviderEvent][] = [
    ['stop', [content('x'), stop('stop')], finish('stop')],
    ['length', [content('x'), stop('length')], finish('length')],
    ['content_filter', [content('x'), stop('content_filter')], finish('content-filter', 'content_filter')],
    ['tool_calls', [call0, stop('tool_calls')], finish('tool-calls', 'tool_calls')],
    ['function_call (deprecated)', [chunk({ function_call: { name: 'f', arguments: '{}' } }), stop('function_call')], finish('tool-calls', 'function_call')],
    ['an unknown reason', [content('x'), stop('eos_token')], finish('other', 'eos_token')],
    ['stop after a call', [call0, stop('stop')], finish('tool-calls', 'stop')],
    ['length after a call stays length', [call0, stop('length')], finish('length')],
    ['stop after a refusal', [chunk({ refusal: 'No.' }), stop('stop')], { ...finish('content-filter', 'stop'), refusal: 'No.' }],
  ];
  for (const [name, inputs, expected] of table) {
    it(`${name} → ${(expected as { reason: string }).reason}`, () => {
      expect(adapt(inputs).values.at(-1)).toEqual(expected);
    });
  }
});

describe('openaiChat: in-stream errors', () => {
  // biome-ignore format: a table
  const table: [OpenAIChatChunk['error'], boolean, string | undefined][] = [
    [{ message: 'm', type: 'server_error', code: null }, true, 'server_error'],
    [{ message: 'm', type: 'requests', code: 'rate_limit_exceeded' }, true, 'rate_limit_exceeded'],
    [{ message: 'm', type: 'overloaded_error' }, true, 'overloaded_error'],
    [{ message: 'm', type: 'invalid_request_error', code: null }, false, 'invalid_request_error'],
    [{ message: 'm', type: 'invalid_request_error', code: 'context_length_exceeded' }, false, 'context_length_exceeded'],
    [{ message: 'm', type: 'insufficient_quota', code: 'insufficient_quota' }, false, 'insufficient_quota'],
    [{ message: 'm', type: 'authentication_error' }, false, 'authentication_error'],
    [{ message: 'm', code: 'invalid_image_url' }, false, 'invalid_image_url'],
    [{ message: 'm', code: 502 }, true, '502'],
    [{ message: 'm', code: 429 }, true, '429'],
    [{ message: 'm', code: 400 }, false, '400'],
    [{ message: 'm', type: 'something_new' }, true, 'something_new'],
    [{ message: 'm' }, true, undefined],
  ];
  for (const [body, retryable, code] of table) {
    it(`${JSON.stringify(body)} → retryable ${retryable}`, () => {
      const payload = errorPayload(body);
      const result = adapt([content('x'), payload]);
      expect(result.values).toEqual([text('x')]);
      expect(result.error).toBeInstanceOf(ProviderError);
      expect(result.error).toMatchObject({ provider: 'openai-chat', retryable, code, payload });
    });
  }

  it('keeps a numeric code as the status', () => {
    expect(adapt([errorPayload({ message: 'Bad gateway', code: 502 })]).error).toMatchObject({ status: 502 });
  });

  it('the retryable option overrides the classification; undefined falls back to it', () => {
    const retryable = (info: { code: string | undefined }) => (info.code === 'model_busy' ? true : undefined);
    const busy = adapt(
      [errorPayload({ message: 'm', type: 'invalid_request_error', code: 'model_busy' })],
      openaiChat({ retryable }),
    );
    expect(busy.error).toMatchObject({ retryable: true, code: 'model_busy' });
    const invalid = adapt(
      [errorPayload({ message: 'm', type: 'invalid_request_error' })],
      openaiChat({ retryable }),
    );
    expect(invalid.error).toMatchObject({ retryable: false });
  });

  it('a retryable option that throws errors the stream with what it threw', () => {
    const thrown = new Error('classifier broke');
    const result = adapt(
      [errorPayload({ message: 'm' })],
      openaiChat({
        retryable: () => {
          throw thrown;
        },
      }),
    );
    expect(result.error).toBe(thrown);
  });

  it("classifies the official SDK's in-stream error (an APIError without status, with the error body)", () => {
    const body = { message: 'The server had an error', type: 'server_error', param: null, code: null };
    const sdkError = Object.assign(new Error(body.message), { status: undefined, error: body });
    const result = collect(
      new Observable<OpenAIChatInput>((s) => {
        s.next(content('Hi'));
        s.error(sdkError);
      }).pipe(openaiChat()),
    );
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ retryable: true, code: 'server_error', payload: body });
  });

  it("reads the SDK's HTTP errors by the same table: a 400 is final, a 429 for lack of quota too", () => {
    const bad = Object.assign(new Error('400 bad'), {
      status: 400,
      error: { type: 'invalid_request_error' },
    });
    const quota = Object.assign(new Error('429 quota'), {
      status: 429,
      error: {
        code: 'insufficient_quota',
        type: 'insufficient_quota',
        message: 'You exceeded your current quota',
      },
    });
    const busy = Object.assign(new Error('503 busy'), { status: 503, error: undefined });
    const read = (error: Error) =>
      collect(new Observable<OpenAIChatInput>((s) => s.error(error)).pipe(openaiChat())).error;
    expect(read(bad)).toMatchObject({
      retryable: false,
      status: 400,
      code: 'invalid_request_error',
      cause: bad,
    });
    expect(read(quota)).toMatchObject({ retryable: false, status: 429, code: 'insufficient_quota' });
    expect(read(busy)).toMatchObject({ retryable: true, status: 503 });
    expect(read(bad)).toBeInstanceOf(ProviderError);
  });

  it('passes connection errors through unchanged', () => {
    for (const error of [
      Object.assign(new Error('Connection error.'), { status: undefined, error: undefined }),
      new TypeError('terminated'),
    ]) {
      expect(collect(new Observable<OpenAIChatInput>((s) => s.error(error)).pipe(openaiChat())).error).toBe(
        error,
      );
    }
  });
});

describe('openaiChat: input handling', () => {
  it('accepts the [DONE] sentinel and ignores anything after it', () => {
    expect(adapt([content('a'), '[DONE]', content('b'), stop()]).values).toEqual([text('a')]);
  });

  it('errors with a non-retryable CleanturnError for a payload that was never parsed', () => {
    const raw = '{"choices":[]}' as unknown as OpenAIChatInput;
    const result = adapt([content('a'), raw, content('b')]);
    expect(result.values).toEqual([text('a')]);
    expect(result.error).toBeInstanceOf(CleanturnError);
    expect(result.error).toMatchObject({ retryable: false, message: expect.stringContaining('JSON.parse') });
  });

  it('an array, a number or null is not a payload either: a typed ProviderPayloadError', () => {
    for (const raw of [[{ choices: [] }], 42, null]) {
      const result = adapt([content('a'), raw as unknown as OpenAIChatInput]);
      expect(result.values).toEqual([text('a')]);
      expect(result.error).toBeInstanceOf(ProviderPayloadError);
      expect(result.error).toMatchObject({ code: 'not-a-payload', retryable: false, payload: raw });
    }
  });

  it('a refusal is never answer text, even beside content', () => {
    const values = adapt([
      content('Sure'),
      chunk({ refusal: 'I cannot ' }),
      chunk({ refusal: 'do that.' }),
      stop(),
    ]).values;
    expect(values).toEqual([
      text('Sure'),
      { ...finish('content-filter', 'stop'), refusal: 'I cannot do that.' },
    ]);
  });

  it('ignores unknown fields, empty content, null deltas and chunks it has no use for', () => {
    const odd = [
      { choices: [{ index: 0, delta: null, finish_reason: null }] },
      { choices: null, usage: null },
      { object: 'chat.completion.chunk', moderation: {} },
      chunk({ content: '', refusal: null, tool_calls: [] }),
      chunk({ content: null, reasoning_content: 'thinking' }),
    ] as OpenAIChatChunk[];
    expect(adapt([...odd, content('ok'), stop()]).values).toEqual([text('ok'), finish('stop')]);
  });

  it('follows one choice when n > 1 (choice 0 by default)', () => {
    const both = (a: string, b: string): OpenAIChatChunk => ({
      choices: [
        { index: 0, delta: { content: a }, finish_reason: null },
        { index: 1, delta: { content: b }, finish_reason: null },
      ],
    });
    const inputs = [both('A1', 'B1'), both('A2', 'B2'), chunk({}, 'length', 1), chunk({}, 'stop', 0)];
    expect(adapt(inputs).values).toEqual([text('A1'), text('A2'), finish('stop')]);
    expect(adapt(inputs, openaiChat({ choice: 1 })).values).toEqual([
      text('B1'),
      text('B2'),
      finish('length'),
    ]);
  });

  it('a fragment without index goes to the call with its id, or else to the latest call', () => {
    const noIndex = (id: string | undefined, args: string, name?: string): OpenAIChatChunk =>
      chunk({ tool_calls: [{ id, function: { name, arguments: args } }] });
    const events = adapt([
      noIndex('c1', '{"a":', 'f'),
      noIndex('c2', '{"b":', 'g'),
      noIndex(undefined, '2}'),
      noIndex('c1', '1}'),
      stop('tool_calls'),
    ]).values;
    expect(events).toEqual([
      delta(0, '{"a":', { id: 'c1', name: 'f' }),
      delta(1, '{"b":', { id: 'c2', name: 'g' }),
      delta(1, '2}'),
      delta(0, '1}', { id: 'c1' }),
      finish('tool-calls', 'tool_calls'),
    ]);
  });

  it('reads the deprecated function_call as call 0', () => {
    const result = collect(
      from([
        chunk({ function_call: { name: 'lookup_order', arguments: '' } }),
        chunk({ function_call: { arguments: '{"order_id":"ORD-7781"}' } }),
        stop('function_call'),
      ]).pipe(openaiChat(), assembleToolCalls()),
    );
    expect(result.values).toEqual([
      call('index-0', 'lookup_order', { order_id: 'ORD-7781' }),
      finish('tool-calls', 'function_call'),
    ]);
  });

  it('passes each argument fragment on as it is, never joined (linear in the stream size)', () => {
    const pieces = Array.from({ length: 2_000 }, (_, i) => (i === 0 ? '{"n":"' : 'x'));
    const inputs = [
      toolDelta(0, '', { id: 'c1', name: 'f' }),
      ...pieces.map((piece) => toolDelta(0, piece)),
      toolDelta(0, '"}'),
      stop('tool_calls'),
    ];
    const fragments = adapt(inputs).values.flatMap((e) =>
      e.type === 'tool-call-delta' ? [e.argsDelta] : [],
    );
    expect(fragments).toEqual(['', ...pieces, '"}']);
  });

  it('keeps its state per subscription: one operator instance, two streams', () => {
    const operator = openaiChat();
    const first = collect(from([toolDelta(0, '{}', { id: 'c1', name: 'f' }), stop()]).pipe(operator));
    const second = collect(from([content('Done.'), stop()]).pipe(operator));
    expect(first.values.at(-1)).toEqual(finish('tool-calls', 'stop'));
    expect(second.values).toEqual([text('Done.'), finish('stop')]);
  });
});

// The finish is held until the usage chunk or [DONE]: the finish_reason chunk emits nothing, [DONE] releases it.
standardChecks<OpenAIChatInput>({
  name: 'openaiChat',
  make: () => openaiChat(),
  values: { a: content('Hi'), b: stop(), c: '[DONE]' },
  expected: { a: text('Hi'), b: nothing, c: finish('stop') },
});

describe('openaiChat: the clean turn after a retry', () => {
  const turnId = 'turn-42';
  /** The n-th subscription replays the n-th fixture (payloads as the transport would hand them over). */
  const replay = (...names: string[]) => attempts(...names.map(payloads));
  const turn = (source: Observable<OpenAIChatInput>) => {
    const seen: TurnEvent[] = [];
    return { seen, states: collect(source.pipe(retriedTurn(openaiChat(), turnId, seen))) };
  };

  it('a stream cut mid-call, then a whole one: the text and the refund of attempt 2 only', () => {
    const { seen, states } = turn(replay('truncated-no-done.sse', 'text-and-call.sse'));
    expect(states.error).toBeUndefined();
    const last = states.values.at(-1);
    expect(last?.text).toBe('Checking order ORD-7781. ');
    expect(last?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(last?.attempts[1]?.usage).toEqual({ inputTokens: 187, outputTokens: 29 });
    expect(seen.filter((e) => e.type === 'reset')).toHaveLength(1);
    const released = seen.filter((e) => e.type === 'tool-call');
    expect(released).toHaveLength(1);
    expect(released[0]).toMatchObject({ id: 'call_7Hq2mWbK9sXv4RtY1nCz0LdE', attempt: 2 });
    expect(released[0]?.effectKey).toBe(effectKey(turnId, { name: 'issue_refund', args: refundArgs }));
  });

  it('a retryable in-stream error is retried; the half sentence of attempt 1 is reset away', () => {
    const { seen, states } = turn(replay('in-stream-error-server.sse', 'usage-missing.sse'));
    expect(states.values.at(-1)?.text).toBe('The refund has started.');
    expect(seen.find((e) => e.type === 'reset')).toMatchObject({ attempt: 2 });
  });

  it('a non-retryable in-stream error is not retried', () => {
    let subscriptions = 0;
    const source = defer(() => {
      subscriptions++;
      return from(payloads('in-stream-error-invalid-request.sse'));
    });
    const { states } = turn(source);
    expect(subscriptions).toBe(1);
    expect(states.error).toBeInstanceOf(ProviderError);
    expect((states.error as ProviderError).retryable).toBe(false);
  });
});
