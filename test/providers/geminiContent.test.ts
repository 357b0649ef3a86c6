// geminiContent(): every fixture in test/fixtures/gemini, one per trap of wire-formats.md §4, through the
// adapter and assembleToolCalls (and the clean turn); error classification; the standard operator checks.
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
import { type GeminiChunk, geminiContent, ProviderError } from 'cleanturn/providers';
import { call, finish, refundArgs, text, usage } from 'cleanturn/testing';
import { concat, defer, from, Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { collect } from '../support/collect.js';
import { attempts, type FixtureCase, fixtureChecks, retriedTurn } from '../support/providerTurns.js';
import { readPayloads } from '../support/sse.js';
import { standardChecks } from '../support/standardChecks.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/gemini/', import.meta.url));

/** The parsed chunks of a fixture file, with the raw JSON error tail a stream can end with. */
const fixture = (name: string) => readPayloads(`${dir}${name}`) as GeminiChunk[];

const refund = (id: string) => call(id, 'issue_refund', refundArgs);

// biome-ignore format: a table of fixtures
const cases: FixtureCase[] = [
  {
    file: 'text-and-call.sse',
    trap: 'text, then a whole functionCall without id that finishes with STOP; usage grows',
    events: [text('Checking order'), usage(88, 3), text(' ORD-7781. '), usage(88, 9), refund('gemini-call-0'), usage(88, 27), finish('tool-calls', 'STOP')],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'no-arg-call.sse',
    trap: 'a functionCall without args means {}',
    events: [call('gemini-call-0', 'list_orders', {}), usage(60, 5), finish('tool-calls', 'STOP')],
    turn: { text: '', calls: ['gemini-call-0'] },
  },
  {
    file: 'parallel-calls.sse',
    trap: 'parallel calls, two in one chunk and one in the next: ids by position',
    events: [
      text('Looking up your orders.'), usage(70, 6),
      call('gemini-call-0', 'lookup_order', { order_id: 'ORD-7781' }), call('gemini-call-1', 'lookup_order', { order_id: 'ORD-7782' }), usage(70, 30),
      call('gemini-call-2', 'lookup_order', { order_id: 'ORD-7783' }), usage(70, 44), finish('tool-calls', 'STOP'),
    ],
    turn: { text: 'Looking up your orders.', calls: ['gemini-call-0', 'gemini-call-1', 'gemini-call-2'] },
  },
  {
    file: 'call-with-id.sse',
    trap: 'a functionCall that carries an id keeps it',
    events: [refund('fc_7d1e0b2a'), usage(88, 20), finish('tool-calls', 'STOP')],
    turn: { text: '', calls: ['fc_7d1e0b2a'] },
  },
  {
    file: 'thought-parts.sse',
    trap: 'thought parts are not answer text; thoughts count as output',
    events: [usage(88, 41), text('Checking order ORD-7781. '), usage(88, 48), refund('gemini-call-0'), usage(88, 66), finish('tool-calls', 'STOP')],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'error-tail.sse',
    trap: 'a raw JSON error tail (503 UNAVAILABLE) after text: a retryable ProviderError',
    events: [text('Checking order'), usage(88, 3), text(' ORD-7781. Refunding the dam'), usage(88, 9)],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ provider: 'gemini', code: 'UNAVAILABLE', status: 503, retryable: true });
      expect((error as Error).message).toBe('gemini: The model is overloaded. Please try again later.');
    },
  },
  {
    file: 'error-data-line.sse',
    trap: 'the error as an SSE data line (400 INVALID_ARGUMENT): not retryable',
    events: [],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', status: 400, retryable: false });
    },
  },
  {
    file: 'malformed-function-call.sse',
    trap: 'MALFORMED_FUNCTION_CALL finishes with error',
    events: [usage(88, 0), finish('error', 'MALFORMED_FUNCTION_CALL')],
    turn: { text: '', calls: [] },
  },
  {
    file: 'safety.sse',
    trap: 'a SAFETY finish is content-filter',
    events: [text('I can help with'), usage(40, 4), finish('content-filter', 'SAFETY')],
    turn: { text: 'I can help with', calls: [] },
  },
  {
    file: 'blocked-prompt.sse',
    trap: 'a blocked prompt: no candidates, promptFeedback.blockReason',
    events: [usage(33), finish('content-filter', 'PROHIBITED_CONTENT')],
    turn: { text: '', calls: [] },
  },
  {
    file: 'empty-candidates.sse',
    trap: 'chunks with an empty candidates array are skipped; nothing follows the finish',
    events: [usage(88, 0), text('Refund started.'), usage(88, 4), finish('stop', 'STOP')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'max-tokens.sse',
    trap: 'MAX_TOKENS is length',
    events: [text('The refund policy says that'), usage(88, 8), finish('length', 'MAX_TOKENS')],
    turn: { text: 'The refund policy says that', calls: [] },
  },
  {
    file: 'unicode-split.sse',
    trap: 'unicode split across chunks: a combining mark and a ZWJ emoji sequence; unicode in arguments',
    events: [
      text('Refund for Zoe'), usage(50, 3), text('\u0308 \u{1F469}'), usage(50, 5), text('\u200d\u{1F4BB} 注文番号 ORD-7781.'), usage(50, 12),
      call('gemini-call-0', 'add_note', { order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' }), usage(50, 30), finish('tool-calls', 'STOP'),
    ],
    turn: { text: 'Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} 注文番号 ORD-7781.', calls: ['gemini-call-0'] },
  },
  {
    file: 'crlf.sse',
    trap: 'CRLF framing',
    events: [text('Refund '), usage(20, 2), text('started.'), usage(20, 4), finish('stop', 'STOP')],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'missing-optional-fields.sse',
    trap: 'missing optional fields: no usageMetadata, index, role, modelVersion or responseId',
    events: [text('Refund started.'), refund('gemini-call-0'), finish('tool-calls', 'STOP')],
    turn: { text: 'Refund started.', calls: ['gemini-call-0'] },
  },
  {
    file: 'vertex-streamed-args.sse',
    trap: 'Vertex streamed arguments: path-addressed strings continued across chunks, closed by an empty functionCall',
    events: [text('Checking order ORD-7781. '), refund('gemini-call-0'), usage(88, 27), finish('tool-calls', 'STOP')],
    turn: { text: 'Checking order ORD-7781. ', calls: ['gemini-call-0'] },
  },
  {
    file: 'vertex-streamed-args-unclosed.sse',
    trap: 'Vertex streamed arguments with arrays, numbers, booleans, null; the closing part never arrives',
    events: [
      usage(88, 27),
      call('gemini-call-0', 'create_return', {
        order_id: 'ORD-7781',
        items: [{ sku: 'BK-0042', qty: 1 }, { sku: 'BK-0043', qty: 2 }],
        gift: false,
        note: null,
      }),
      finish('tool-calls', 'STOP'),
    ],
    turn: { text: '', calls: ['gemini-call-0'] },
  },
  {
    file: 'truncated.sse',
    trap: 'the stream ended without finishReason: no finish',
    events: [text('Checking order'), usage(88, 3), text(' ORD-7781. '), usage(88, 9)],
  },
];

describe('geminiContent: fixtures', () => {
  fixtureChecks({
    cases,
    files: () => readdirSync(dir),
    read: fixture,
    adapter: () => geminiContent(),
    turnId,
  });

  it('generated ids are the same on every run of the same stream', () => {
    const ids = () =>
      collect(from(fixture('parallel-calls.sse')).pipe(geminiContent()))
        .values.filter((e) => e.type === 'tool-call')
        .map((e) => e.id);
    expect(ids()).toEqual(ids());
    expect(ids()).toEqual(['gemini-call-0', 'gemini-call-1', 'gemini-call-2']);
  });

  it('a truncated stream is a retryable MissingFinishError with requireFinish', () => {
    const result = collect(
      from(fixture('truncated.sse')).pipe(geminiContent(), assembleToolCalls(), requireFinish()),
    );
    expect(result.error).toBeInstanceOf(MissingFinishError);
  });
});

describe('geminiContent: the help-desk retry', () => {
  it('an error tail, then a complete attempt: attempt 2 text only, one refund, one reset', () => {
    const states = collect(
      attempts(fixture('error-tail.sse'), fixture('text-and-call.sse')).pipe(
        retriedTurn(geminiContent(), turnId),
      ),
    );
    expect(states.error).toBeUndefined();
    const turn = states.values.at(-1);
    expect(turn?.text).toBe('Checking order ORD-7781. ');
    expect(turn?.toolCalls).toEqual([
      { ...refund('gemini-call-0'), attempt: 2, effectKey: effectKey(turnId, refund('gemini-call-0')) },
    ]);
    expect(turn?.attempts.map((a) => [a.attempt, a.outcome, a.usage])).toEqual([
      [1, 'abandoned', { inputTokens: 88, outputTokens: 9 }],
      [2, 'completed', { inputTokens: 88, outputTokens: 27 }],
    ]);
  });

  it('an invalid argument is not retried', () => {
    let subscriptions = 0;
    const result = collect(
      defer(() => {
        subscriptions++;
        return from(fixture('error-data-line.sse'));
      }).pipe(geminiContent(), assembleToolCalls(), requireFinish(), retryAsEvents({ count: 2 })),
    );
    expect(subscriptions).toBe(1);
    expect(result.error).toMatchObject({ retryable: false, status: 400 });
  });
});

describe('geminiContent: errors', () => {
  const tail = (error: GeminiChunk['error']): GeminiChunk[] => [{ error }];
  const errorOf = (chunks: GeminiChunk[], options = {}) =>
    collect(from(chunks).pipe(geminiContent(options))).error;

  it.each([
    [503, 'UNAVAILABLE', true],
    [429, 'RESOURCE_EXHAUSTED', true],
    [500, 'INTERNAL', true],
    [504, 'DEADLINE_EXCEEDED', true],
    [400, 'INVALID_ARGUMENT', false],
    [403, 'PERMISSION_DENIED', false],
    [401, 'UNAUTHENTICATED', false],
    [404, 'NOT_FOUND', false],
    [502, undefined, true],
    [403, undefined, false],
    [undefined, undefined, true],
  ])('code %s, status %s: retryable %s', (code, status, expected) => {
    const error = errorOf(tail({ code, status, message: 'm' }));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: expected, status: code, code: status });
  });

  it('the retryable option overrides the default', () => {
    const error = errorOf(tail({ code: 503, status: 'UNAVAILABLE' }), { retryable: () => false });
    expect(error).toMatchObject({ retryable: false });
  });

  it('a retryable option that throws errors the stream with what it throws', () => {
    const thrown = new Error('the callback failed');
    const error = errorOf(tail({ code: 503 }), {
      retryable: () => {
        throw thrown;
      },
    });
    expect(error).toBe(thrown);
  });

  /** An error shaped like the SDK's `ApiError` for a stream's error tail. */
  const apiError = (status: number, body: object) =>
    Object.assign(
      new Error(
        `got status: ${(body as { error: { status: string } }).error.status}. ${JSON.stringify(body)}`,
      ),
      {
        name: 'ApiError',
        status,
      },
    );

  it("the SDK's ApiError for an error tail becomes a ProviderError with the tail's details", () => {
    const thrown = apiError(503, {
      error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' },
    });
    const error = collect(new Observable<GeminiChunk>((s) => s.error(thrown)).pipe(geminiContent())).error;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: true, status: 503, code: 'UNAVAILABLE', payload: thrown });
    expect((error as Error).message).toBe('gemini: The model is overloaded.');
  });

  it("the SDK's ApiError for a failed response is classified by its status", () => {
    const thrown = Object.assign(new Error('{"error":{"code":400}}'), { name: 'ApiError', status: 400 });
    const error = collect(new Observable<GeminiChunk>((s) => s.error(thrown)).pipe(geminiContent())).error;
    expect(error).toMatchObject({ retryable: false, status: 400 });
  });

  it('other source errors pass through unchanged', () => {
    const reset = new TypeError('terminated');
    expect(collect(new Observable<GeminiChunk>((s) => s.error(reset)).pipe(geminiContent())).error).toBe(
      reset,
    );
  });

  it('an input that is not a chunk is a programming error, not retryable', () => {
    const error = errorOf(['data: {}' as unknown as GeminiChunk]);
    expect(error).toBeInstanceOf(CleanturnError);
    expect(error).toMatchObject({ retryable: false });
  });

  it('a functionCall without a name is a retryable ToolCallAssemblyError', () => {
    const error = errorOf([{ candidates: [{ content: { parts: [{ functionCall: { args: { a: 1 } } }] } }] }]);
    expect(error).toBeInstanceOf(ToolCallAssemblyError);
    expect(error).toMatchObject({ problem: 'missing-name', argsText: '{"a":1}', retryable: true });
  });

  it('a streamed call at a path it cannot read is a retryable ToolCallAssemblyError', () => {
    const error = errorOf([
      { candidates: [{ content: { parts: [{ functionCall: { name: 'f', willContinue: true } }] } }] },
      {
        candidates: [
          {
            content: { parts: [{ functionCall: { partialArgs: [{ jsonPath: '$..a', stringValue: 'x' }] } }] },
          },
        ],
      },
    ]);
    expect(error).toBeInstanceOf(ToolCallAssemblyError);
  });

  it('a second streamed call closes the first', () => {
    const start = (name: string): GeminiChunk => ({
      candidates: [{ content: { parts: [{ functionCall: { name, willContinue: true } }] } }],
    });
    const arg = (value: string): GeminiChunk => ({
      candidates: [
        {
          content: {
            parts: [{ functionCall: { partialArgs: [{ jsonPath: "$['a b']", stringValue: value }] } }],
          },
        },
      ],
    });
    const result = collect(
      from([start('f'), arg('1'), start('g'), arg('2'), { candidates: [{ finishReason: 'STOP' }] }]).pipe(
        geminiContent(),
      ),
    );
    expect(result.values).toEqual([
      call('gemini-call-0', 'f', { 'a b': '1' }),
      call('gemini-call-1', 'g', { 'a b': '2' }),
      finish('tool-calls', 'STOP'),
    ]);
  });

  it('nothing follows the finish: later chunks are ignored, a later source error completes the stream', () => {
    const later: GeminiChunk[] = [
      { candidates: [{ content: { parts: [{ text: 'more' }] } }] },
      { error: { code: 503 } },
    ];
    const source = concat(
      from([...fixture('crlf.sse'), ...later]),
      throwError(() => new Error('terminated')),
    );
    const result = collect(source.pipe(geminiContent()));
    expect(result.values).toEqual([
      text('Refund '),
      usage(20, 2),
      text('started.'),
      usage(20, 4),
      finish('stop', 'STOP'),
    ]);
    expect(result.completed).toBe(true);
  });

  it('only the first candidate is read', () => {
    const result = collect(
      from<GeminiChunk[]>([
        { candidates: [{ index: 1, content: { parts: [{ text: 'second' }] } }] },
        { candidates: [{ index: 0, content: { parts: [{ text: 'first' }] }, finishReason: 'STOP' }] },
      ]).pipe(geminiContent()),
    );
    expect(result.values).toEqual([text('first'), finish('stop', 'STOP')]);
  });
});

describe('geminiContent: linear in the stream size', () => {
  it('joins a streamed string of 50,000 pieces once', () => {
    const piece = (value: string, more: boolean): GeminiChunk => ({
      candidates: [
        {
          content: {
            parts: [
              {
                functionCall: {
                  partialArgs: [{ jsonPath: '$.note', stringValue: value, willContinue: more }],
                },
              },
            ],
          },
        },
      ],
    });
    const chunks: GeminiChunk[] = [
      { candidates: [{ content: { parts: [{ functionCall: { name: 'add_note', willContinue: true } }] } }] },
      ...Array.from({ length: 50_000 }, () => piece('ab', true)),
      piece('', false),
      { candidates: [{ content: { parts: [{ functionCall: {} }] }, finishReason: 'STOP' }] },
    ];
    const result = collect(from(chunks).pipe(geminiContent()));
    const note = (result.values[0] as { args: { note: string } }).args.note;
    expect(note).toHaveLength(100_000);
  });
});

// biome-ignore format: an aligned value table
const sample: Record<'a' | 'b' | 'c', GeminiChunk> = {
  a: { candidates: [{ content: { parts: [{ text: 'Refund ' }] } }] },
  b: { candidates: [{ content: { parts: [{ text: 'started.' }] } }] },
  c: { candidates: [{ content: { parts: [] }, finishReason: 'STOP' }] },
};
const sampleOut = { a: text('Refund '), b: text('started.'), c: finish('stop', 'STOP') };

standardChecks<GeminiChunk>({
  name: 'geminiContent',
  make: () => geminiContent(),
  values: sample,
  expected: sampleOut,
});

describe('geminiContent: an error tail, frame by frame', () => {
  it('errors at an error tail and unsubscribes from the source', () =>
    new TestScheduler((actual, expected) => expect(actual).toEqual(expected)).run(
      ({ cold, expectObservable, expectSubscriptions }) => {
        const e: GeminiChunk = { error: { code: 503, message: 'overloaded', status: 'UNAVAILABLE' } };
        const source = cold('-a-e-b-|', { ...sample, e });
        const expected = new ProviderError('gemini', 'overloaded', {
          retryable: true,
          code: 'UNAVAILABLE',
          status: 503,
          payload: e,
        });
        expectObservable(source.pipe(geminiContent())).toBe('-a-#', sampleOut, expected);
        expectSubscriptions(source.subscriptions).toBe('^--!');
      },
    ));
});
