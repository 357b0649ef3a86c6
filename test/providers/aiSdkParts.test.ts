// aiSdkParts(): every fixture in test/fixtures/ai-sdk (streamText parts as .jsonl: they are in-process objects
// with no wire framing; UI message stream chunks as .sse, their real framing), one per trap of wire-formats.md
// §5, through the adapter and assembleToolCalls (and the clean turn); errors; the standard operator checks.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  assembleToolCalls,
  CleanturnError,
  effectKey,
  MissingFinishError,
  requireFinish,
  retryAsEvents,
} from 'cleanturn';
import { type AiSdkStreamPart, aiSdkParts, ProviderError, ProviderPayloadError } from 'cleanturn/providers';
import { call, finish, refundArgs, retrying, text, usage } from 'cleanturn/testing';
import { concat, defer, from, Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { collect } from '../support/collect.js';
import { attempts, type FixtureCase, fixtureChecks, retriedTurn } from '../support/providerTurns.js';
import { parseSse, readPayloads } from '../support/sse.js';
import { standardChecks } from '../support/standardChecks.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/ai-sdk/', import.meta.url));
/** The upstream OpenAI Chat Completions streams that the interop test feeds to streamText; not AI SDK parts. */
const upstream = (file: string) => file.startsWith('upstream-openai-chat');

/** The parts of a fixture: one JSON object per line (.jsonl) or the data payloads of an SSE transcript. */
const fixture = (name: string) => readPayloads(`${dir}${name}`) as AiSdkStreamPart[];

const C1 = 'call_Q2wE3rT4yU5iO6pA7sD8fG9h';
const refund = (id: string) => call(id, 'issue_refund', refundArgs);

const providerError = (fields: Record<string, unknown>) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderError);
  expect(error).toMatchObject({ provider: 'ai-sdk', ...fields });
};

const payloadError = (field: string) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderPayloadError);
  expect(error).toMatchObject({ code: 'invalid-field', field, retryable: false, operator: 'aiSdkParts' });
};

// biome-ignore format: a table of fixtures
const cases: FixtureCase[] = [
  {
    file: 'text-and-tool.jsonl',
    trap: 'text, then tool input previews and the whole call; text-end arrives after the tool input parts',
    events: [text('Checking order'), text(' ORD-7781. '), refund(C1), usage(142, 31), finish('tool-calls', 'tool_calls')],
    turn: { text: 'Checking order ORD-7781. ', calls: [C1] },
  },
  {
    file: 'no-arg-tool.jsonl',
    trap: 'a tool without arguments: an empty input delta, the call has {}',
    events: [call('call_NoArgs0aB1cD2eF3gH4iJ5k', 'list_orders', {}), usage(60, 9), finish('tool-calls', 'tool_calls')],
    turn: { text: '', calls: ['call_NoArgs0aB1cD2eF3gH4iJ5k'] },
  },
  {
    file: 'parallel-calls.jsonl',
    trap: 'two parallel calls, input parts interleaved, the whole input of one in its first delta',
    events: [
      call('call_Par1aaaaaaaaaaaaaaaaaaaa', 'lookup_order', { order_id: 'ORD-7781' }),
      call('call_Par2bbbbbbbbbbbbbbbbbbbb', 'lookup_order', { order_id: 'ORD-7782' }),
      usage(80, 40), finish('tool-calls', 'tool_calls'),
    ],
    turn: { text: '', calls: ['call_Par1aaaaaaaaaaaaaaaaaaaa', 'call_Par2bbbbbbbbbbbbbbbbbbbb'] },
  },
  {
    file: 'tool-call-finish-stop.jsonl',
    trap: 'a tool call in a step that finishes with stop: the call decides',
    events: [refund(C1), usage(88, 27), finish('tool-calls', 'STOP')],
    turn: { text: '', calls: [C1] },
  },
  {
    file: 'error-part.jsonl',
    trap: 'an error part mid-stream (an APICallError that is retryable), then the finish the SDK still sends',
    events: [text('Checking order ORD-7781. '), text('Refunding the dam')],
    error: providerError({ retryable: true, status: 529, code: 'overloaded_error' }),
  },
  {
    file: 'error-not-retryable.jsonl',
    trap: 'an error part whose error body says the request is invalid',
    events: [],
    error: providerError({ retryable: false, code: 'invalid_request_error' }),
  },
  {
    file: 'abort.jsonl',
    trap: 'abort by the caller: no finish; not retryable',
    events: [text('Checking order')],
    error: providerError({ retryable: false, code: 'aborted' }),
  },
  {
    file: 'abort-timeout.jsonl',
    trap: "abort by streamText's own chunk timeout: a stall, retryable",
    events: [text('Checking order')],
    error: providerError({ retryable: true, code: 'aborted' }),
  },
  {
    file: 'multi-step.jsonl',
    trap: 'multi-step: a tool the SDK executed (tool-result) is not released again; usage summed over steps',
    events: [usage(100, 20), text('Your order arrived damaged; '), text('I can refund it.'), usage(250, 32), finish('stop', 'stop')],
    turn: { text: 'Your order arrived damaged; I can refund it.', calls: [] },
  },
  {
    file: 'invalid-tool-call.jsonl',
    trap: 'a call streamText marked invalid (its input did not parse): retryable, never released',
    events: [],
    error: (error) => {
      providerError({ retryable: true, code: 'invalid_tool_call' })(error);
      expect((error as Error).message).toContain('JSON parsing failed');
    },
  },
  {
    file: 'provider-executed.jsonl',
    trap: 'a tool the provider executed (web search) is not a client call',
    events: [text('Returns are accepted within 30 days.'), usage(300, 40), finish('stop', 'end_turn')],
    turn: { text: 'Returns are accepted within 30 days.', calls: [] },
  },
  {
    file: 'missing-optional-fields.jsonl',
    trap: 'missing optional fields: no start parts, no rawFinishReason, usage unknown',
    events: [text('Refund started.'), finish('stop')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'duplicate-tool-call.jsonl',
    trap: 'a repeated tool-call part with the same id is released once',
    events: [refund(C1), usage(88, 27), finish('tool-calls', 'tool_calls')],
    turn: { text: '', calls: [C1] },
  },
  {
    file: 'ui-text-and-tool.sse',
    trap: 'UI message stream: text-delta with delta, tool-input-available, finish with finishReason',
    events: [text('Checking order'), text(' ORD-7781. '), refund(C1), finish('tool-calls')],
    turn: { text: 'Checking order ORD-7781. ', calls: [C1] },
  },
  {
    file: 'ui-error.sse',
    trap: 'UI message stream: a masked errorText, retryable',
    events: [text('Checking order')],
    error: (error) => {
      providerError({ retryable: true, code: undefined })(error);
      expect((error as Error).message).toBe('ai-sdk: An error occurred.');
    },
  },
  {
    file: 'ui-abort.sse',
    trap: 'UI message stream: abort',
    events: [text('Checking order')],
    error: providerError({ retryable: false, code: 'aborted' }),
  },
  {
    file: 'ui-reset-step.sse',
    trap: 'UI message stream: reset-step before a step attempt (ignored) and after a failed one (a retry)',
    events: [text('Refunding the dam'), retrying('reset-step'), text('Refund started.'), refund(C1), finish('tool-calls')],
    turn: { text: 'Refund started.', calls: [C1] },
  },
  {
    file: 'ui-crlf-unicode.sse',
    trap: 'UI message stream: CRLF framing, unicode split across chunks, a finish without finishReason',
    events: [text('Refund for Zoe'), text('\u0308 \u{1F469}'), text('\u200d\u{1F4BB} 注文番号 ORD-7781.'), finish('stop')],
    turn: { text: 'Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} 注文番号 ORD-7781.', calls: [] },
  },
  {
    file: 'ui-tool-input-error.sse',
    trap: 'UI message stream: tool-input-error, retryable, never released',
    events: [],
    error: providerError({ retryable: true, code: 'invalid_tool_call' }),
  },
  {
    file: 'tool-call-missing-id.jsonl',
    trap: 'two tool-call parts without toolCallId: the second is not "the same call"; neither can be read',
    events: [text('Looking up both orders.')],
    error: payloadError('toolCallId'),
  },
  {
    file: 'tool-call-missing-name.jsonl',
    trap: 'a tool-call part without toolName: never a call with an undefined name',
    events: [],
    error: payloadError('toolName'),
  },
  {
    file: 'ui-tool-missing-name.sse',
    trap: 'UI message stream: tool-input-available without toolName',
    events: [text('Refunding order ORD-7781.')],
    error: payloadError('toolName'),
  },
  {
    file: 'error-model-not-found.jsonl',
    trap: 'an OpenAI error chunk with code model_not_found (type invalid_request_error): the same request fails again',
    events: [],
    error: providerError({ retryable: false, code: 'model_not_found' }),
  },
  {
    file: 'error-content-policy.jsonl',
    trap: "a Responses error with code content_policy_violation that the SDK flags isRetryable: the code decides",
    events: [text('I can help with')],
    error: providerError({ retryable: false, code: 'content_policy_violation', status: 500 }),
  },
  {
    file: 'error-unimplemented.jsonl',
    trap: 'a Gemini APICallError, HTTP 501 UNIMPLEMENTED, isRetryable: the code decides before the 5xx status',
    events: [],
    error: providerError({ retryable: false, code: 'UNIMPLEMENTED', status: 501 }),
  },
  {
    file: 'error-insufficient-quota.jsonl',
    trap: 'an APICallError with HTTP 429 and isRetryable, whose body says insufficient_quota: not retryable',
    events: [],
    error: providerError({ retryable: false, code: 'insufficient_quota', status: 429 }),
  },
];

describe('aiSdkParts: fixtures', () => {
  fixtureChecks({
    cases,
    files: () => readdirSync(dir).filter((f) => !upstream(f)),
    read: fixture,
    adapter: () => aiSdkParts(),
    turnId,
  });

  it("the UI message stream's [DONE] is its end: what follows is not read", () => {
    const raw = parseSse(readFileSync(`${dir}ui-text-and-tool.sse`, 'utf8')).map((event) =>
      event.data === '[DONE]' ? ('[DONE]' as const) : (JSON.parse(event.data) as AiSdkStreamPart),
    );
    expect(raw.at(-1)).toBe('[DONE]');
    const result = collect(from(raw).pipe(aiSdkParts()));
    expect(result.values).toEqual(cases.find((c) => c.file === 'ui-text-and-tool.sse')?.events);
    expect(result.completed).toBe(true);
    const later = [{ type: 'text-delta', delta: 'a' }, '[DONE]', { type: 'text-delta', delta: 'b' }];
    const cut = collect(from(later as AiSdkStreamPart[]).pipe(aiSdkParts()));
    expect(cut.values).toEqual([text('a')]);
    expect(cut.completed).toBe(true);
  });

  it('a stream cut before finish is a retryable MissingFinishError with requireFinish', () => {
    const cut = fixture('text-and-tool.jsonl').slice(0, -2);
    const result = collect(from(cut).pipe(aiSdkParts(), assembleToolCalls(), requireFinish()));
    expect(result.error).toBeInstanceOf(MissingFinishError);
    expect(result.values.some((e) => e.type === 'tool-call')).toBe(false); // its step never ended
  });
});

describe('aiSdkParts: the help-desk retry', () => {
  it('an error part, then a complete attempt: attempt 2 text only, one refund, one reset', () => {
    const states = collect(
      attempts(fixture('error-part.jsonl'), fixture('text-and-tool.jsonl')).pipe(
        retriedTurn(aiSdkParts(), turnId),
      ),
    );
    expect(states.error).toBeUndefined();
    const turn = states.values.at(-1);
    expect(turn?.text).toBe('Checking order ORD-7781. ');
    expect(turn?.toolCalls).toEqual([
      { ...refund(C1), attempt: 2, effectKey: effectKey(turnId, refund(C1)) },
    ]);
    expect(turn?.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'abandoned'],
      [2, 'completed'],
    ]);
  });

  it('an abort is not retried', () => {
    let subscriptions = 0;
    const result = collect(
      defer(() => {
        subscriptions++;
        return from(fixture('abort.jsonl'));
      }).pipe(aiSdkParts(), assembleToolCalls(), requireFinish(), retryAsEvents({ count: 2 })),
    );
    expect(subscriptions).toBe(1);
    expect(result.error).toMatchObject({ code: 'aborted', retryable: false });
  });
});

describe('aiSdkParts: errors', () => {
  const errorOf = (parts: AiSdkStreamPart[], options = {}) =>
    collect(from(parts).pipe(aiSdkParts(options))).error;

  it.each([
    ['an AI SDK error flagged not retryable, no code or status', { isRetryable: false, message: 'm' }, false],
    [
      'an APICallError, status 500, flagged not retryable: the status decides',
      { statusCode: 500, isRetryable: false, message: 'm' },
      true,
    ],
    [
      'a body code model_not_found',
      { message: 'm', type: 'invalid_request_error', code: 'model_not_found' },
      false,
    ],
    [
      'a body code content_policy_violation',
      { message: 'm', code: 'content_policy_violation', isRetryable: true },
      false,
    ],
    ['a gRPC status OUT_OF_RANGE', { error: { status: 'OUT_OF_RANGE', message: 'm' } }, false],
    [
      'a gRPC status UNIMPLEMENTED, HTTP 501',
      { error: { code: 501, status: 'UNIMPLEMENTED', message: 'm' } },
      false,
    ],
    [
      'an APICallError 429 whose body says insufficient_quota',
      { statusCode: 429, isRetryable: true, message: 'm', data: { error: { code: 'insufficient_quota' } } },
      false,
    ],
    ['an OpenAI chunk error: server_error', { message: 'm', type: 'server_error', code: null }, true],
    [
      'an OpenAI chunk error: context_length_exceeded',
      { message: 'm', type: 'invalid_request_error', code: 'context_length_exceeded' },
      false,
    ],
    ['a 4xx status', { statusCode: 403, message: 'm' }, false],
    ['a 429 status', { statusCode: 429, message: 'm' }, true],
    ['a Gemini error body', { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'm' } }, false],
    ['a plain Error', new Error('socket hang up'), true],
    ['a string', 'something broke', true],
  ])('an error part with %s: retryable %s', (_what, error, expected) => {
    expect(errorOf([{ type: 'error', error } as AiSdkStreamPart])).toMatchObject({ retryable: expected });
  });

  it('the retryable option sees the error and may override the default', () => {
    const seen: unknown[] = [];
    const error = errorOf([{ type: 'abort', reason: 'This operation was aborted' } as AiSdkStreamPart], {
      retryable: (info: unknown) => {
        seen.push(info);
        return true;
      },
    });
    expect(seen).toEqual([
      {
        code: 'aborted',
        status: undefined,
        message: 'This operation was aborted',
        error: 'This operation was aborted',
      },
    ]);
    expect(error).toMatchObject({ retryable: true });
  });

  it('a retryable option that throws errors the stream with what it throws', () => {
    const thrown = new Error('the callback failed');
    const error = errorOf([{ type: 'error', error: 'x' } as AiSdkStreamPart], {
      retryable: () => {
        throw thrown;
      },
    });
    expect(error).toBe(thrown);
  });

  it('a source error with an isRetryable flag (an APICallError) becomes a ProviderError', () => {
    const thrown = Object.assign(new Error('Bad Request'), { statusCode: 400, isRetryable: false });
    const error = collect(new Observable<AiSdkStreamPart>((s) => s.error(thrown)).pipe(aiSdkParts())).error;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: false, status: 400, payload: thrown });
  });

  it('a source APICallError (ai@6 on a dropped or refused connection) is read by the same table', () => {
    const thrown = Object.assign(new Error('You exceeded your current quota.'), {
      name: 'AI_APICallError',
      statusCode: 429,
      isRetryable: true,
      data: {
        error: {
          message: 'You exceeded your current quota.',
          type: 'insufficient_quota',
          code: 'insufficient_quota',
        },
      },
    });
    const source = concat(
      from(fixture('text-and-tool.jsonl').slice(0, 4)),
      throwError(() => thrown),
    );
    const result = collect(source.pipe(aiSdkParts()));
    expect(result.values).toEqual([text('Checking order')]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({
      retryable: false,
      status: 429,
      code: 'insufficient_quota',
      payload: thrown,
    });
    const reset = Object.assign(new Error('Cannot connect to API: other side closed'), { isRetryable: true });
    const cut = collect(
      concat(
        from([]),
        throwError(() => reset),
      ).pipe(aiSdkParts()),
    ).error;
    expect(cut).toMatchObject({ retryable: true, code: undefined, status: undefined, payload: reset });
  });

  it('other source errors pass through unchanged', () => {
    const reset = new TypeError('terminated');
    expect(collect(new Observable<AiSdkStreamPart>((s) => s.error(reset)).pipe(aiSdkParts())).error).toBe(
      reset,
    );
  });

  it('an input that is not a part is a programming error, not retryable', () => {
    const error = errorOf(['{"type":"start"}' as unknown as AiSdkStreamPart]);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({ retryable: false });
  });

  it('a part whose type is not a string is a payload error naming the field', () => {
    for (const part of [{ type: 42 }, { text: 'Hi' }]) {
      payloadError('type')(errorOf([part as unknown as AiSdkStreamPart]));
    }
  });

  const call1 = { toolCallId: 'c1', toolName: 'issue_refund', input: refundArgs };
  it.each([
    ['a numeric toolCallId', { type: 'tool-call', ...call1, toolCallId: 7 }, 'toolCallId'],
    ['an empty toolCallId', { type: 'tool-input-available', ...call1, toolCallId: '' }, 'toolCallId'],
    ['an object toolName', { type: 'tool-call', ...call1, toolName: { name: 'f' } }, 'toolName'],
    ['an empty toolName', { type: 'tool-input-available', ...call1, toolName: '' }, 'toolName'],
    [
      'a tool-input-error without toolCallId',
      { type: 'tool-input-error', toolName: 'f', errorText: 'x' },
      'toolCallId',
    ],
    ['arguments as a number', { type: 'tool-call', ...call1, input: 42 }, 'input'],
    ['a tool-result without toolCallId', { type: 'tool-result', toolName: 'f', output: {} }, 'toolCallId'],
    ['a text-delta whose text is a number', { type: 'text-delta', id: '0', text: 42 }, 'text'],
  ])('%s is a ProviderPayloadError, never a call or a drop', (_what, part, field) => {
    const parts = [part, { type: 'finish-step' }, { type: 'finish', finishReason: 'tool-calls' }];
    const result = collect(from(parts as AiSdkStreamPart[]).pipe(aiSdkParts()));
    expect(result.values).toEqual([]);
    payloadError(field)(result.error);
  });

  it('nothing follows the finish: later parts are ignored, a later source error completes the stream', () => {
    const later = [
      { type: 'text-delta', text: 'more' },
      { type: 'error', error: 'late' },
    ] as AiSdkStreamPart[];
    const source = concat(
      from([...fixture('text-and-tool.jsonl'), ...later]),
      throwError(() => new Error('x')),
    );
    const result = collect(source.pipe(aiSdkParts()));
    expect(result.values.at(-1)).toEqual(finish('tool-calls', 'tool_calls'));
    expect(result.values.filter((e) => e.type === 'text')).toHaveLength(2);
    expect(result.completed).toBe(true);
  });

  it('a tool-call denied by the user is not released', () => {
    const parts = [
      { type: 'tool-call', toolCallId: 'c1', toolName: 'issue_refund', input: refundArgs },
      { type: 'tool-output-denied', toolCallId: 'c1' },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'tool-calls' },
    ] as AiSdkStreamPart[];
    expect(collect(from(parts).pipe(aiSdkParts())).values).toEqual([finish('tool-calls')]);
  });

  it("an unknown finish reason is other; a reset-step resets the step's usage and calls", () => {
    const parts = [
      { type: 'text-delta', delta: 'a' },
      { type: 'tool-input-available', toolCallId: 'c1', toolName: 'f', input: {} },
      { type: 'reset-step' },
      { type: 'finish', finishReason: 'unknown' },
    ] as AiSdkStreamPart[];
    expect(collect(from(parts).pipe(aiSdkParts())).values).toEqual([
      text('a'),
      retrying('reset-step'),
      finish('other'),
    ]);
  });
});

// biome-ignore format: an aligned value table
const sample: Record<'a' | 'b' | 'c', AiSdkStreamPart> = {
  a: { type: 'text-delta', text: 'Refund ' } as AiSdkStreamPart,
  b: { type: 'text-delta', text: 'started.' } as AiSdkStreamPart,
  c: { type: 'finish', finishReason: 'stop', rawFinishReason: 'end_turn' } as AiSdkStreamPart,
};
const sampleOut = { a: text('Refund '), b: text('started.'), c: finish('stop', 'end_turn') };

standardChecks<AiSdkStreamPart>({
  name: 'aiSdkParts',
  make: () => aiSdkParts(),
  values: sample,
  expected: sampleOut,
});

describe('aiSdkParts: an error part, frame by frame', () => {
  it('errors at an error part and unsubscribes from the source', () =>
    new TestScheduler((actual, expected) => expect(actual).toEqual(expected)).run(
      ({ cold, expectObservable, expectSubscriptions }) => {
        const e = { type: 'error', errorText: 'An error occurred.' } as AiSdkStreamPart;
        const source = cold('-a-e-b-|', { ...sample, e });
        const expected = new ProviderError('ai-sdk', 'An error occurred.', { retryable: true, payload: e });
        expectObservable(source.pipe(aiSdkParts())).toBe('-a-#', sampleOut, expected);
        expectSubscriptions(source.subscriptions).toBe('^--!');
      },
    ));
});
