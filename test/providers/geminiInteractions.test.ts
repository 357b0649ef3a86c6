// geminiInteractions(): every fixture in test/fixtures/gemini-interactions through the adapter and
// assembleToolCalls (and the clean turn); the finish reasons of the interaction statuses; errors and what it cannot
// read; replays by event id; the adapter in a retried turn; the standard operator checks.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  assembleToolCalls,
  attemptPipeline,
  effectKey,
  type ProviderEvent,
  requireFinish,
  type TurnEvent,
} from 'cleanturn';
import { geminiInteractions, ProviderError } from 'cleanturn/providers';
import { call, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { defer, from, type Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type {
  GeminiInteractionsEvent,
  GeminiInteractionsOutput,
} from '../../src/providers/geminiInteractions.js';
import { collect } from '../support/collect.js';
import { expectTurnError } from '../support/errors.js';
import { attempts, type FixtureCase, fixtureChecks, retriedTurn } from '../support/providerTurns.js';
import { readPayloads } from '../support/sse.js';
import { standardChecks } from '../support/standardChecks.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/gemini-interactions/', import.meta.url));

/** The parsed events of a fixture file. */
const fixture = (name: string) => readPayloads(`${dir}${name}`) as GeminiInteractionsEvent[];

/** A finish with the interaction id and the attempt's output steps. */
const done = (
  reason: 'stop' | 'tool-calls' | 'length' | 'other',
  raw: string,
  responseId: string,
  steps: GeminiInteractionsOutput['steps'],
): ProviderEvent => ({
  ...finish(reason, raw),
  responseId,
  output: { format: 'gemini-interactions', steps } as GeminiInteractionsOutput,
});
/** Usage with the details the Interactions API reports. */
const used = (input: number, output: number, details: { cached?: number; reasoning?: number } = {}) => ({
  ...usage(input, output),
  ...(details.cached === undefined ? {} : { cachedInputTokens: details.cached }),
  ...(details.reasoning === undefined ? {} : { reasoningTokens: details.reasoning }),
});
const answer = (text: string) => ({ type: 'model_output', content: [{ type: 'text', text }] });
const summaryText = [
  '**Checking the refund policy**\n\nThe customer reports a damaged book. ',
  'Damage in transit qualifies for a full refund.',
] as const;
const signature = 'EqQBCkgIARABGAIiQPq7c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0';
const legacySignature = 'CiQB0e2Kb3NsZWdhY3ktdGhvdWdodC1zaWduYXR1cmU';
const refundCall = (id: string) => ({
  type: 'function_call',
  id,
  name: 'issue_refund',
  arguments: helpDesk.refundArgs,
});

const cases: FixtureCase[] = [
  {
    file: 'text-only.sse',
    trap: 'a text answer: the status completed is stop, the interaction id the response id',
    events: [
      text('Your order ORD-7781 shipped on Monday '),
      text('and arrives tomorrow.'),
      used(64, 12),
      done('stop', 'completed', 'v1_ChdSZWZ1bmQtT1JELTc3ODEtdGV4dA', [
        answer('Your order ORD-7781 shipped on Monday and arrives tomorrow.'),
      ]),
    ],
    turn: { text: 'Your order ORD-7781 shipped on Monday and arrives tomorrow.', calls: [] },
  },
  {
    file: 'thoughts-and-call.sse',
    trap: 'thought summaries are reasoning with their signature kept; a call streamed in arguments_delta pieces is one whole call at its step.stop; requires_action is tool-calls',
    events: [
      reasoning(summaryText[0]),
      reasoning(summaryText[1]),
      text('Checking order ORD-7781. '),
      call('fc_7q2xk4', 'issue_refund', helpDesk.refundArgs),
      used(142, 89, { cached: 64, reasoning: 58 }),
      done('tool-calls', 'requires_action', 'v1_ChdSZWZ1bmQtT1JELTc3ODEtY2FsbA', [
        {
          type: 'thought',
          summary: summaryText.map((t) => ({ type: 'text', text: t })),
          signature,
        },
        answer('Checking order ORD-7781. '),
        refundCall('fc_7q2xk4'),
      ]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['fc_7q2xk4'] },
  },
  {
    file: 'legacy-content-events.sse',
    trap: 'the older interaction.start, content.* and interaction.complete events, with a whole function_call delta',
    events: [
      reasoning('The book of order ORD-7781 is damaged: refund it.'),
      text('Checking order '),
      text('ORD-7781. '),
      call('fc_legacy1', 'issue_refund', helpDesk.refundArgs),
      used(120, 64, { reasoning: 40 }),
      done('tool-calls', 'requires_action', 'v1_ChdSZWZ1bmQtT1JELTc3ODEtb2xk', [
        {
          type: 'thought',
          summary: [{ type: 'text', text: 'The book of order ORD-7781 is damaged: refund it.' }],
          signature: legacySignature,
        },
        answer('Checking order ORD-7781. '),
        refundCall('fc_legacy1'),
      ]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['fc_legacy1'] },
  },
  {
    file: 'error-event.sse',
    trap: 'an error event after text: a retryable ProviderError (UNAVAILABLE)',
    events: [text('Checking order ')],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({
        provider: 'gemini',
        code: 'upstream',
        upstreamCode: 'UNAVAILABLE',
        retryable: true,
        message: 'gemini: The model is overloaded. Please try again later.',
      });
    },
  },
  {
    file: 'failed-status.sse',
    trap: 'a failed status update, then the stream ends: a ProviderError, retryable by default',
    events: [],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: 'upstream', upstreamCode: 'failed', retryable: true });
    },
  },
  {
    file: 'cut.sse',
    trap: 'the stream is cut mid-call: the text so far, no call, no finish',
    events: [text('Checking order ORD-7781. '), text('Refunding the dam')],
  },
  {
    file: 'replayed-event-ids.sse',
    trap: 'an event whose event_id was read already is a replay: dropped',
    events: [
      text('Checking order '),
      text('ORD-7781. '),
      used(64, 9),
      done('stop', 'completed', 'v1_ChdSZWZ1bmQtT1JELTc3ODEtcmVw', [answer('Checking order ORD-7781. ')]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: [] },
  },
  {
    file: 'incomplete-max-tokens.sse',
    trap: 'usage in metadata.total_usage; the status incomplete (a token limit) is length',
    events: [
      used(64, 16),
      text('Here is the full refund policy: items damaged in'),
      done('length', 'incomplete', 'v1_ChdSZWZ1bmQtT1JELTc3ODEtbWF4', [
        answer('Here is the full refund policy: items damaged in'),
      ]),
    ],
    turn: { text: 'Here is the full refund policy: items damaged in', calls: [] },
  },
];

describe('geminiInteractions: fixtures', () => {
  fixtureChecks({
    cases,
    files: () => readdirSync(dir),
    read: fixture,
    adapter: () => geminiInteractions(),
    turnId,
  });

  it('a cut stream is a retryable missing-finish TurnError with requireFinish', () => {
    const result = collect(
      from(fixture('cut.sse')).pipe(geminiInteractions(), assembleToolCalls(), requireFinish()),
    );
    expectTurnError(result.error, 'missing-finish');
    expect(result.error).toMatchObject({ retryable: true });
  });
});

/** Events of one attempt, written short. */
const ev = {
  created: (id = 'v1_a'): GeminiInteractionsEvent => ({
    event_type: 'interaction.created',
    interaction: { id, status: 'in_progress' },
  }),
  start: (index: number, step: Record<string, unknown>): GeminiInteractionsEvent => ({
    event_type: 'step.start',
    index,
    step,
  }),
  delta: (index: number, delta: Record<string, unknown>): GeminiInteractionsEvent => ({
    event_type: 'step.delta',
    index,
    delta,
  }),
  stop: (index: number): GeminiInteractionsEvent => ({ event_type: 'step.stop', index }),
  completed: (status: string, more: Record<string, unknown> = {}): GeminiInteractionsEvent => ({
    event_type: 'interaction.completed',
    interaction: { id: 'v1_a', status, ...more },
  }),
};
const adapt = (events: readonly unknown[]) =>
  collect(from(events as GeminiInteractionsEvent[]).pipe(geminiInteractions()));
const answerStart = ev.start(0, { type: 'model_output' });
const says = (t: string) => ev.delta(0, { type: 'text', text: t });
const callStart = (index = 1, id: string | null = 'fc_1') =>
  ev.start(index, { type: 'function_call', ...(id ? { id } : {}), name: 'issue_refund', arguments: {} });

describe('geminiInteractions: finish reasons', () => {
  it.each([
    ['completed', 'stop'],
    ['requires_action', 'other'],
    ['incomplete', 'length'],
    ['budget_exceeded', 'length'],
    ['in_progress', 'other'],
  ])('status %s without a call is %s, raw the status', (status, reason) => {
    const result = adapt([ev.created(), answerStart, says('ok'), ev.completed(status)]);
    expect(result.values.at(-1)).toMatchObject({ type: 'finish', reason, raw: status, responseId: 'v1_a' });
  });

  it('completed after a call is tool-calls', () => {
    const args = ev.delta(1, {
      type: 'arguments_delta',
      arguments: '{"order_id":"ORD-7781","amount":"full"}',
    });
    const result = adapt([callStart(), args, ev.stop(1), ev.completed('completed')]);
    expect(result.values).toEqual([
      call('fc_1', 'issue_refund', helpDesk.refundArgs),
      done('tool-calls', 'completed', 'v1_a', [refundCall('fc_1')]),
    ]);
  });

  it('a completion without a status is other, without raw; nothing after the completion is read', () => {
    const result = adapt([
      answerStart,
      says('ok'),
      { event_type: 'interaction.completed', interaction: {} },
      says(' more'),
    ]);
    expect(result.values).toEqual([text('ok'), { ...finish('other'), output: expect.anything() }]);
    expect(result.completed).toBe(true);
  });
});

describe('geminiInteractions: calls', () => {
  it('a call without arguments_delta keeps the arguments it started with; no id: gemini-call-<n>', () => {
    const start = ev.start(0, {
      type: 'function_call',
      name: 'lookup_order',
      arguments: { order_id: 'ORD-7781' },
    });
    const result = adapt([start, ev.stop(0), ev.completed('requires_action')]);
    expect(result.values[0]).toEqual(call('gemini-call-0', 'lookup_order', { order_id: 'ORD-7781' }));
  });

  it('an older content.start call completed by a whole function_call delta is one call, its generated id kept', () => {
    const open = {
      event_type: 'content.start',
      index: 0,
      content: { type: 'function_call', name: 'issue_refund' },
    };
    const whole = {
      event_type: 'content.delta',
      index: 0,
      delta: { type: 'function_call', name: 'issue_refund', arguments: helpDesk.refundArgs },
    };
    const result = adapt([
      open,
      whole,
      { event_type: 'content.stop', index: 0 },
      ev.completed('requires_action'),
    ]);
    expect(result.values).toEqual([
      call('gemini-call-0', 'issue_refund', helpDesk.refundArgs),
      done('tool-calls', 'requires_action', 'v1_a', [refundCall('gemini-call-0')]),
    ]);
  });

  it('a call left open at the completion goes out before the finish', () => {
    const piece = ev.delta(1, {
      type: 'arguments_delta',
      arguments: '{"order_id":"ORD-7781","amount":"full"}',
    });
    const result = adapt([callStart(), piece, ev.completed('requires_action')]);
    expect(result.values.map((e) => e.type)).toEqual(['tool-call', 'finish']);
  });

  it('a call only in the completion steps goes out before the finish; one already streamed does not again', () => {
    const steps = [
      refundCall('fc_1'),
      { type: 'function_call', id: 'fc_2', name: 'lookup_order', arguments: {} },
    ];
    const piece = ev.delta(1, {
      type: 'arguments_delta',
      arguments: '{"order_id":"ORD-7781","amount":"full"}',
    });
    const result = adapt([callStart(), piece, ev.stop(1), ev.completed('requires_action', { steps })]);
    expect(result.values.filter((e) => e.type === 'tool-call').map((e) => e.id)).toEqual(['fc_1', 'fc_2']);
  });

  it('two calls, each whole at its own step.stop, in order', () => {
    const result = adapt([
      callStart(0, 'fc_a'),
      callStart(1, 'fc_b'),
      ev.delta(1, { type: 'arguments_delta', arguments: '{"order_id":"ORD-2"}' }),
      ev.delta(0, { type: 'arguments_delta', arguments: '{"order_id":"ORD-1"}' }),
      ev.stop(1),
      ev.stop(0),
      ev.completed('requires_action'),
    ]);
    expect(result.values.filter((e) => e.type === 'tool-call')).toEqual([
      call('fc_b', 'issue_refund', { order_id: 'ORD-2' }),
      call('fc_a', 'issue_refund', { order_id: 'ORD-1' }),
    ]);
  });

  it('a provider tool step is not a call: it stays in the output, and completed is stop', () => {
    const search = { type: 'google_search_call', id: 'gs_1', arguments: { queries: ['refund policy'] } };
    const result = adapt([
      ev.start(0, search),
      ev.delta(0, { type: 'google_search_call', id: 'gs_1' }),
      ev.stop(0),
      ev.completed('completed'),
    ]);
    expect(result.values).toEqual([done('stop', 'completed', 'v1_a', [search])]);
  });
});

describe('geminiInteractions: errors', () => {
  it.each([
    ['UNAVAILABLE', true],
    ['RESOURCE_EXHAUSTED', true],
    ['INVALID_ARGUMENT', false],
    ['https://ai.google.dev/errors/permission-denied', false],
    [undefined, true],
  ])('an error event with code %s: retryable %s', (code, retryable) => {
    const error = { event_type: 'error', error: { ...(code ? { code } : {}), message: 'it failed' } };
    const result = adapt([answerStart, says('Checking'), error]);
    expect(result.values).toEqual([text('Checking')]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({
      provider: 'gemini',
      code: 'upstream',
      upstreamCode: code,
      retryable,
      payload: error,
    });
  });

  it('a failed completion: its first recorded error decides; cancelled is retryable', () => {
    const errors = [{ code: 'INVALID_ARGUMENT', message: 'Unknown tool: issue_refnd' }];
    const failed = adapt([ev.created(), ev.completed('failed', { errors })]);
    expect(failed.error).toMatchObject({
      code: 'upstream',
      upstreamCode: 'INVALID_ARGUMENT',
      retryable: false,
    });
    expect((failed.error as Error).message).toBe('gemini: Unknown tool: issue_refnd');
    const cancelled = adapt([ev.created(), ev.completed('cancelled')]);
    expect(cancelled.error).toMatchObject({ code: 'upstream', upstreamCode: 'cancelled', retryable: true });
    expect(cancelled.values).toEqual([]);
  });

  it('the retryable option decides first; undefined keeps the default', () => {
    const error = { event_type: 'error', error: { code: 'UNAVAILABLE', message: 'busy' } };
    const never = collect(
      from([error] as GeminiInteractionsEvent[]).pipe(geminiInteractions({ retryable: () => false })),
    );
    expect(never.error).toMatchObject({ retryable: false });
    const seen: unknown[] = [];
    const kept = collect(
      from([error] as GeminiInteractionsEvent[]).pipe(
        geminiInteractions({ retryable: (info) => void seen.push(info) }),
      ),
    );
    expect(kept.error).toMatchObject({ retryable: true });
    expect(seen).toEqual([{ code: 'UNAVAILABLE', status: undefined, message: 'busy' }]);
  });

  it("the SDK's APIError (a numeric status) is a ProviderError; other errors pass unchanged", () => {
    class APIError extends Error {
      constructor(
        readonly status: number,
        readonly error: unknown,
      ) {
        super(`${status} overloaded`);
      }
    }
    const sdk = new APIError(503, { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' });
    const read = collect(throwError(() => sdk).pipe(geminiInteractions()));
    expect(read.error).toBeInstanceOf(ProviderError);
    expect(read.error).toMatchObject({
      status: 503,
      code: 'upstream',
      upstreamCode: 'UNAVAILABLE',
      retryable: true,
      cause: sdk,
    });
    const quota = new APIError(400, { message: 'API key not valid.', status: 'INVALID_ARGUMENT' });
    expect(collect(throwError(() => quota).pipe(geminiInteractions())).error).toMatchObject({
      retryable: false,
    });
    const trap = new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap');
        },
      },
    );
    const hostile = Object.assign(new Error('busy'), { status: 503, error: trap });
    expect(collect(throwError(() => hostile).pipe(geminiInteractions())).error).toMatchObject({
      status: 503,
      message: 'gemini: busy',
      retryable: true,
    });
    const reset = new Error('socket hang up');
    expect(collect(throwError(() => reset).pipe(geminiInteractions())).error).toBe(reset);
  });

  it.each<[string, unknown[], string | undefined]>([
    ['an event_type that is not a string', [{ event_type: 7 }], 'event_type'],
    ['a delta that is not an object', [{ event_type: 'step.delta', index: 0, delta: 'hi' }], 'delta'],
    ['a text that is not a string', [answerStart, ev.delta(0, { type: 'text', text: 7 })], 'delta.text'],
    ['a negative index', [{ event_type: 'step.start', index: -1, step: { type: 'model_output' } }], 'index'],
    ['a numeric tool name', [ev.start(0, { type: 'function_call', id: 'fc_1', name: 7 })], 'step.name'],
    [
      'arguments that are an array',
      [ev.start(0, { type: 'function_call', name: 'f', arguments: [1] })],
      'step.arguments',
    ],
    [
      'argument pieces that are not JSON',
      [callStart(0), ev.delta(0, { type: 'arguments_delta', arguments: '{"a":' }), ev.stop(0)],
      'delta.arguments',
    ],
    [
      'a usage count that is not a number',
      [{ event_type: 'step.stop', index: 0, usage: { total_input_tokens: '12' } }],
      'usage.total_input_tokens',
    ],
    ['a step.start without a step', [{ event_type: 'step.start', index: 0 }], 'step'],
    [
      'a text delta in a thought step',
      [ev.start(0, { type: 'thought' }), ev.delta(0, { type: 'text', text: 'x' })],
      'delta.type',
    ],
  ])('%s: a non-retryable ProviderError (invalid-field)', (_, events, field) => {
    const result = adapt(events);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'invalid-field', retryable: false, field });
    expect(result.values.some((e) => e.type === 'tool-call')).toBe(false);
  });

  it('an arguments_delta for a step never started as a call: unknown-reference, retryable', () => {
    const result = adapt([answerStart, ev.delta(0, { type: 'arguments_delta', arguments: '{}' })]);
    expect(result.error).toBeInstanceOf(ProviderError);
    expect(result.error).toMatchObject({ code: 'unknown-reference', retryable: true });
  });

  it('a string that is not a payload: not-a-payload', () => {
    const result = adapt(['data: {}']);
    expect(result.error).toMatchObject({ code: 'not-a-payload' });
  });
});

describe('geminiInteractions: forward compatible', () => {
  it('unknown event types and delta types are read past', () => {
    const result = adapt([
      { event_type: 'interaction.heartbeat' },
      answerStart,
      ev.delta(0, { type: 'text_annotation_delta', annotations: [] }),
      ev.delta(0, { type: 'image', data: 'iVBORw0KGgo=' }),
      says('ok'),
      ev.completed('completed'),
    ]);
    expect(result.values).toEqual([text('ok'), done('stop', 'completed', 'v1_a', [answer('ok')])]);
  });

  it('text deltas of a step never started open a model_output step; a signature lands on its step', () => {
    const result = adapt([
      says('Checking '),
      ev.delta(0, { type: 'thought_signature', signature: 'c2ln' }),
      ev.completed('completed'),
    ]);
    expect(result.values.at(-1)).toEqual(
      done('stop', 'completed', 'v1_a', [{ ...answer('Checking '), signature: 'c2ln' }]),
    );
  });

  it('the same usage twice is one usage event; a change is another', () => {
    const meta = (output: number) => ({
      event_type: 'step.delta',
      index: 0,
      delta: { type: 'text', text: '.' },
      metadata: { total_usage: { total_input_tokens: 10, total_output_tokens: output } },
    });
    const result = adapt([meta(1), meta(1), meta(2)]);
    expect(result.values.filter((e) => e.type === 'usage')).toEqual([used(10, 1), used(10, 2)]);
  });

  it('keeps its state per subscription: one operator instance, two streams', () => {
    const operator = geminiInteractions();
    const first = collect(
      from([callStart(0, null), ev.stop(0), ev.completed('requires_action')]).pipe(operator),
    );
    const second = collect(
      from([callStart(0, null), ev.stop(0), ev.completed('requires_action')]).pipe(operator),
    );
    expect(first.values[0]).toMatchObject({ id: 'gemini-call-0' });
    expect(second.values[0]).toMatchObject({ id: 'gemini-call-0' });
  });
});

describe('geminiInteractions: the clean turn after a retry', () => {
  const turn = (source: Observable<GeminiInteractionsEvent>) => {
    const seen: TurnEvent[] = [];
    return { seen, states: collect(source.pipe(retriedTurn(geminiInteractions(), turnId, seen))) };
  };

  it('attempt 1 cut mid-call, attempt 2 whole: the clean text of attempt 2, one call released', () => {
    const { seen, states } = turn(attempts(fixture('cut.sse'), fixture('thoughts-and-call.sse')));
    expect(states.error).toBeUndefined();
    const last = states.values.at(-1);
    expect(last?.text).toBe('Checking order ORD-7781. ');
    expect(last?.reasoning).toBe(summaryText.join(''));
    expect(last?.attempts.map((a) => a.outcome)).toEqual(['abandoned', 'completed']);
    expect(seen.filter((e) => e.type === 'reset')).toHaveLength(1);
    const released = seen.filter((e) => e.type === 'tool-call');
    expect(released.map((k) => k.id)).toEqual(['fc_7q2xk4']);
    expect(released[0]?.effectKey).toBe(
      effectKey(turnId, { name: 'issue_refund', args: helpDesk.refundArgs }),
    );
    expect(last?.finish?.responseId).toBe('v1_ChdSZWZ1bmQtT1JELTc3ODEtY2FsbA');
  });

  it('a retryable error event is retried; a non-retryable failure is not', () => {
    const retried = turn(attempts(fixture('error-event.sse'), fixture('text-only.sse')));
    expect(retried.states.values.at(-1)?.text).toBe(
      'Your order ORD-7781 shipped on Monday and arrives tomorrow.',
    );
    let subscriptions = 0;
    const invalid = [
      ev.created(),
      ev.completed('failed', { errors: [{ code: 'INVALID_ARGUMENT', message: 'bad' }] }),
    ];
    const failed = turn(
      defer(() => {
        subscriptions++;
        return from(invalid);
      }),
    );
    expect(subscriptions).toBe(1);
    expect(failed.states.error).toMatchObject({
      retryable: false,
      code: 'upstream',
      upstreamCode: 'INVALID_ARGUMENT',
    });
  });

  it('inside attemptPipeline a cut stream fails the attempt (no finish), the next one finishes', () => {
    const result = collect(from(fixture('cut.sse')).pipe(attemptPipeline(geminiInteractions())));
    expectTurnError(result.error, 'missing-finish');
  });
});

describe('geminiInteractions: frame by frame', () => {
  const scheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

  it('the text at once, the call at its step.stop, the finish at the completion; what follows is not read', () =>
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const values = {
        s: answerStart,
        t: says('Refund '),
        f: callStart(),
        a: ev.delta(1, { type: 'arguments_delta', arguments: '{"order_id":"ORD-7781","amount":"full"}' }),
        p: ev.stop(1),
        c: ev.completed('requires_action'),
      };
      const source = cold('-s-t-f-a-p-c-t-|', values);
      expectObservable(source.pipe(geminiInteractions())).toBe('---T-----K-F---|', {
        T: text('Refund '),
        K: call('fc_1', 'issue_refund', helpDesk.refundArgs),
        F: done('tool-calls', 'requires_action', 'v1_a', [answer('Refund '), refundCall('fc_1')]),
      });
      expectSubscriptions(source.subscriptions).toBe('^--------------!');
    }));
});

standardChecks<GeminiInteractionsEvent>({
  name: 'geminiInteractions',
  make: () => geminiInteractions(),
  values: { a: says('Refund '), b: says('started.'), c: ev.completed('completed') },
  expected: {
    a: text('Refund '),
    b: text('started.'),
    c: done('stop', 'completed', 'v1_a', [answer('Refund started.')]),
  },
});
