// aiSdkParts(): every fixture in test/fixtures/ai-sdk (streamText parts as .jsonl: they are in-process objects
// with no wire framing; UI message stream chunks as .sse, their real framing), one per trap of wire-formats.md
// §5, through the adapter and assembleToolCalls (and the clean turn); errors; the standard operator checks.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  assembleToolCalls,
  CleanturnError,
  effectKey,
  type FinishReason,
  requireFinish,
  retryAsEvents,
} from 'cleanturn';
import { aiSdkParts, ProviderError } from 'cleanturn/providers';
import { call, helpDesk, reasoning, retrying, text, usage } from 'cleanturn/testing';
import { concat, defer, from, Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { AiSdkOutput, AiSdkStreamPart } from '../../src/providers/aiSdkParts.js';
import { upstreamProviderError } from '../../src/providers/errors.js';
import type { FinishEvent, UsageEvent } from '../../src/types.js';
import { collect } from '../support/collect.js';
import { expectTurnError } from '../support/errors.js';
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
const refund = (id: string) => call(id, 'issue_refund', helpDesk.refundArgs);

const providerError = (fields: Record<string, unknown>) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderError);
  expect(error).toMatchObject({ provider: 'ai-sdk', ...fields });
};

const payloadError = (field: string) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderError);
  expect(error).toMatchObject({ code: 'invalid-field', field, retryable: false, operator: 'aiSdkParts' });
};

// What the finish of a fixture carries: its output (the content in stream order), the response id, the raw reason.
type Content = AiSdkOutput['content'];
const ended = (
  reason: FinishReason,
  content: Content,
  more: { raw?: string; responseId?: string; paused?: boolean } = {},
): FinishEvent => {
  const event: FinishEvent = { type: 'finish', reason };
  if (more.raw !== undefined) event.raw = more.raw;
  if (more.paused === true) event.paused = true;
  if (more.responseId !== undefined) event.responseId = more.responseId;
  const output: AiSdkOutput = { format: 'ai-sdk', content };
  event.output = output;
  return event;
};
/** A usage event with the cache and reasoning counts the SDK reports (`inputTokenDetails`, `outputTokenDetails`). */
const tokens = (input: number, output: number, cached?: number, reasoningTokens?: number): UsageEvent => {
  const event = usage(input, output);
  if (cached !== undefined) event.cachedInputTokens = cached;
  if (reasoningTokens !== undefined) event.reasoningTokens = reasoningTokens;
  return event;
};
type Options = Record<string, Record<string, string | null>>;
const textPart = (value: string, providerOptions?: Options): Content[number] =>
  providerOptions === undefined
    ? { type: 'text', text: value }
    : { type: 'text', text: value, providerOptions };
const thought = (value: string, providerOptions?: Options): Content[number] =>
  providerOptions === undefined
    ? { type: 'reasoning', text: value }
    : { type: 'reasoning', text: value, providerOptions };
const callPart = (
  id: string,
  toolName: string,
  input: Record<string, unknown>,
  more: { providerExecuted?: true; providerOptions?: Options } = {},
) => ({ type: 'tool-call', toolCallId: id, toolName, input, ...more }) as Content[number];
const resultPart = (id: string, toolName: string, output: unknown) =>
  ({ type: 'tool-result', toolCallId: id, toolName, output }) as Content[number];

const refundPart = (id: string, more = {}) => callPart(id, 'issue_refund', helpDesk.refundArgs, more);
const G1 = 'call_Gh2Ij3Kl4Mn5Op6Qr7St8Uv9';
const T1 = 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP';
const RS = 'rs_68f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5';
const signature =
  'EqQBCkYIBxgCKkBx7hQmKc1sVt0n3dY8cRkq5wOd2Gm9pZs4vLb6fTa0yHu1eJi3NoWr8QxAzlCgEMvsUPyDIYbRLS0KF5jtJlNeEgzq2PEnT4uZfgH6axkaDAn1';
const redactedData =
  'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj';
const encrypted =
  'gAAAAABo9kQx3Vb1R2nM8cZl0pYt5WqKf7HsJd4uEa6Tg9Xr2Ci1Lo3Nm5Bv8Zk0Qw7Ey4Rt6Yu1Ip9Oa2Sd3Fg5Hj7Kl0Zx4Cv6Bn8Mq==';
const textSignature =
  'CtIBAdHtim9kX2Vx7c3Nq0pLr8sT1uW4yZ6aB9dE2fG5hJ8kM1nP4qS7tV0wY3zA6cD9eF2gH5iK8lN1oQ4rT7uX0';
const callSignature = 'CiQBVKhc7xMZ3n0pQr5sT8uV1wX4yZ7aB0cD3eF6gH9iJ2kL5mN8oP1qR4s';
const webSearch = 'srvtoolu_01WebSearchPauseAaBbCc';
const uiSearch = 'srvtoolu_01UiWebSearchDdEeFf';

// biome-ignore format: a table of fixtures
const cases: FixtureCase[] = [
  {
    file: 'text-and-tool.jsonl',
    trap: 'text, then tool input previews and the whole call; text-end arrives after the tool input parts',
    events: [
      text('Checking order'), text(' ORD-7781. '), refund(C1), tokens(142, 31, 0, 0),
      ended('tool-calls', [textPart('Checking order ORD-7781. '), refundPart(C1)], { raw: 'tool_calls', responseId: 'chatcmpl-AbC123xyz' }),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: [C1] },
  },
  {
    file: 'no-arg-tool.jsonl',
    trap: 'a tool without arguments: an empty input delta, the call has {}',
    events: [
      call('call_NoArgs0aB1cD2eF3gH4iJ5k', 'list_orders', {}), tokens(60, 9, 0, 0),
      ended('tool-calls', [callPart('call_NoArgs0aB1cD2eF3gH4iJ5k', 'list_orders', {})], { raw: 'tool_calls', responseId: 'chatcmpl-AbC123xyz' }),
    ],
    turn: { text: '', calls: ['call_NoArgs0aB1cD2eF3gH4iJ5k'] },
  },
  {
    file: 'parallel-calls.jsonl',
    trap: 'two parallel calls, input parts interleaved, the whole input of one in its first delta',
    events: [
      call('call_Par1aaaaaaaaaaaaaaaaaaaa', 'lookup_order', { order_id: 'ORD-7781' }),
      call('call_Par2bbbbbbbbbbbbbbbbbbbb', 'lookup_order', { order_id: 'ORD-7782' }),
      tokens(80, 40, 0, 0),
      ended('tool-calls', [
        callPart('call_Par1aaaaaaaaaaaaaaaaaaaa', 'lookup_order', { order_id: 'ORD-7781' }),
        callPart('call_Par2bbbbbbbbbbbbbbbbbbbb', 'lookup_order', { order_id: 'ORD-7782' }),
      ], { raw: 'tool_calls', responseId: 'chatcmpl-AbC123xyz' }),
    ],
    turn: { text: '', calls: ['call_Par1aaaaaaaaaaaaaaaaaaaa', 'call_Par2bbbbbbbbbbbbbbbbbbbb'] },
  },
  {
    file: 'tool-call-finish-stop.jsonl',
    trap: 'a tool call in a step that finishes with stop: the call decides',
    events: [refund(C1), tokens(88, 27, 0, 0), ended('tool-calls', [refundPart(C1)], { raw: 'STOP', responseId: 'b36LacjwM668nsEP2tbsgQQ' })],
    turn: { text: '', calls: [C1] },
  },
  {
    file: 'error-part.jsonl',
    trap: 'an error part mid-stream (an APICallError that is retryable), then the finish the SDK still sends',
    events: [text('Checking order ORD-7781. '), text('Refunding the dam')],
    error: providerError({ retryable: true, status: 529, code: 'upstream', upstreamCode: 'overloaded_error' }),
  },
  {
    file: 'error-not-retryable.jsonl',
    trap: 'an error part whose error body says the request is invalid',
    events: [],
    error: providerError({ retryable: false, code: 'upstream', upstreamCode: 'invalid_request_error' }),
  },
  {
    file: 'abort.jsonl',
    trap: 'abort by the caller: no finish; not retryable',
    events: [text('Checking order')],
    error: providerError({ retryable: false, code: 'upstream', upstreamCode: 'aborted' }),
  },
  {
    file: 'abort-timeout.jsonl',
    trap: "abort by streamText's own chunk timeout: a stall, retryable",
    events: [text('Checking order')],
    error: providerError({ retryable: true, code: 'upstream', upstreamCode: 'aborted' }),
  },
  {
    file: 'multi-step.jsonl',
    trap: 'multi-step: a tool the SDK executed (tool-result) is not released again; usage summed over steps',
    events: [
      tokens(100, 20, 0, 0), text('Your order arrived damaged; '), text('I can refund it.'), tokens(250, 32, 0, 0),
      ended('stop', [
        callPart('call_Lookup1cD2eF3gH4iJ5kL6m', 'lookup_order', { order_id: 'ORD-7781' }),
        resultPart('call_Lookup1cD2eF3gH4iJ5kL6m', 'lookup_order', { type: 'json', value: { status: 'delivered', damaged: true } }),
        textPart('Your order arrived damaged; I can refund it.'),
      ], { raw: 'stop', responseId: 'chatcmpl-AbC123xyz' }),
    ],
    turn: { text: 'Your order arrived damaged; I can refund it.', calls: [] },
  },
  {
    file: 'multi-step-sdk-tool-then-client-call.jsonl',
    trap: "multi-step: step 1's tools ran in the SDK (a result before the step's text ends, an error), step 2 calls a client tool",
    events: [
      text('Looking the order up.'), tokens(100, 20, 0, 0), text('The book arrived damaged: refunding it.'),
      refund(C1), tokens(280, 45, 128, 0),
      ended('tool-calls', [
        callPart('call_Lookup2aB3cD4eF5gH6iJ7kL8', 'lookup_order', { order_id: 'ORD-7781' }),
        textPart('Looking the order up.'),
        callPart('call_Stock3bC4dE5fG6hI7jK8lM9n', 'check_stock', { isbn: '978-0141439518' }),
        // the results of the tools the SDK ran follow their step's content, in call order
        resultPart('call_Lookup2aB3cD4eF5gH6iJ7kL8', 'lookup_order', { type: 'json', value: { status: 'delivered', damaged: true } }),
        resultPart('call_Stock3bC4dE5fG6hI7jK8lM9n', 'check_stock', { type: 'error-text', value: 'the stock service timed out' }),
        textPart('The book arrived damaged: refunding it.'),
        refundPart(C1),
      ], { raw: 'tool_calls', responseId: 'chatcmpl-Step2iJ3kL4mN5oP' }),
    ],
    turn: { text: 'Looking the order up.The book arrived damaged: refunding it.', calls: [C1] },
  },
  {
    file: 'invalid-tool-call.jsonl',
    trap: 'a call streamText marked invalid (its input did not parse): retryable, never released',
    events: [],
    error: (error) => {
      providerError({ retryable: true, code: 'upstream', upstreamCode: 'invalid_tool_call' })(error);
      expect((error as Error).message).toContain('JSON parsing failed');
    },
  },
  {
    file: 'provider-executed.jsonl',
    trap: 'a tool the provider executed (web search) is not a client call; it and its result stay in the output',
    events: [
      text('Returns are accepted within 30 days.'), tokens(300, 40, 0, 0),
      ended('stop', [
        callPart('srvtoolu_01WebSearchAaBbCcDdEe', 'web_search', { query: 'bookshop return policy' }, { providerExecuted: true }),
        resultPart('srvtoolu_01WebSearchAaBbCcDdEe', 'web_search', { type: 'json', value: [{ url: 'https://example.com/returns', title: 'Returns' }] }),
        textPart('Returns are accepted within 30 days.'),
      ], { raw: 'end_turn', responseId: 'chatcmpl-AbC123xyz' }),
    ],
    turn: { text: 'Returns are accepted within 30 days.', calls: [] },
  },
  {
    file: 'missing-optional-fields.jsonl',
    trap: 'missing optional fields: no start parts, no rawFinishReason, usage unknown',
    events: [text('Refund started.'), ended('stop', [textPart('Refund started.')], { responseId: 'resp_1' })],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'duplicate-tool-call.jsonl',
    trap: 'a repeated tool-call part with the same id is released once, and is once in the output',
    events: [refund(C1), tokens(88, 27, 0, 0), ended('tool-calls', [refundPart(C1)], { raw: 'tool_calls', responseId: 'chatcmpl-AbC123xyz' })],
    turn: { text: '', calls: [C1] },
  },
  {
    file: 'anthropic-thinking-signature-redacted-then-tool.jsonl',
    trap: 'thinking with its signature on an empty reasoning-delta, a redacted block (nothing to show), text, a call; cache reads',
    events: [
      reasoning('The customer says the book arrived damaged. '), reasoning('Order ORD-7781 qualifies for a full refund.'),
      text('Checking order'), text(' ORD-7781. '), refund(T1), tokens(2212, 188, 1800),
      ended('tool-calls', [
        thought('The customer says the book arrived damaged. Order ORD-7781 qualifies for a full refund.', { anthropic: { signature } }),
        thought('', { anthropic: { redactedData } }),
        textPart('Checking order ORD-7781. '),
        refundPart(T1),
      ], { raw: 'tool_use', responseId: 'msg_01K2JbSUMYhez5RHoK9ZCj9U' }),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: [T1] },
  },
  {
    file: 'openai-encrypted-reasoning-summaries-then-call.jsonl',
    trap: 'two reasoning summary parts of one item, the encrypted content on the last reasoning-end; the call item id',
    events: [
      reasoning('**Checking the order**\n\nThe customer wants a refund'), reasoning(' for a damaged book.'),
      reasoning('**Issuing the refund**\n\nA full refund fits the policy.'), refund(G1), tokens(1334, 212, 1024, 192),
      ended('tool-calls', [
        thought('**Checking the order**\n\nThe customer wants a refund for a damaged book.', { openai: { itemId: RS } }),
        thought('**Issuing the refund**\n\nA full refund fits the policy.', { openai: { itemId: RS, reasoningEncryptedContent: encrypted } }),
        refundPart(G1, { providerOptions: { openai: { itemId: 'fc_68f1a2b3c4d5e6f7a8b9c0d1e2f3a4c6' } } }),
      ], { responseId: 'resp_68f1a2b3c4d5e6f70123456789abcdef' }),
    ],
    turn: { text: '', calls: [G1] },
  },
  {
    file: 'gemini-thought-signatures-on-text-and-call.jsonl',
    trap: 'a thought part, a thought signature on an empty text delta (kept on its text part) and on the call',
    events: [
      reasoning('**Refund policy**\n\nA book that arrived damaged gets a full refund.'), text('Checking order ORD-7781. '),
      refund('3xQfW9pLm2RkT8vY'), tokens(88, 101, undefined, 40),
      ended('tool-calls', [
        thought('**Refund policy**\n\nA book that arrived damaged gets a full refund.'),
        textPart('Checking order ORD-7781. ', { google: { thoughtSignature: textSignature } }),
        refundPart('3xQfW9pLm2RkT8vY', { providerOptions: { google: { thoughtSignature: callSignature } } }),
      ], { raw: 'STOP', responseId: 'ZfHpaJ2bK8iFz7IP8c2r4Qg' }),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['3xQfW9pLm2RkT8vY'] },
  },
  {
    file: 'anthropic-server-tool-pause-turn.jsonl',
    trap: 'pause_turn after a server tool (the SDK says stop): paused, reason other; the search and its encrypted result kept',
    events: [
      text('Let me look up the return policy.'), tokens(5210, 96, 0),
      ended('other', [
        textPart('Let me look up the return policy.'),
        callPart(webSearch, 'web_search', { query: 'bookshop damaged book return policy' }, { providerExecuted: true }),
        resultPart(webSearch, 'web_search', {
          type: 'json',
          value: [{ url: 'https://example.com/returns', title: 'Returns and refunds', pageAge: '2 weeks ago', encryptedContent: 'EqgfCioIBxgCIiQ4ZmNkYzA1Yy1hZGMyLTQ0ZmYtOTBiNi0wY2M1YTJkYjk3OWQSDKqBR0ekYA6zWA==', type: 'web_search_result' }],
        }),
      ], { raw: 'pause_turn', paused: true, responseId: 'msg_01PauseTurnXy7Zq3Vb9Nc2Md5' }),
    ],
    turn: { text: 'Let me look up the return policy.', calls: [] },
  },
  {
    file: 'ui-text-and-tool.sse',
    trap: 'UI message stream: text-delta with delta, tool-input-available, finish with finishReason',
    events: [text('Checking order'), text(' ORD-7781. '), refund(C1), ended('tool-calls', [textPart('Checking order ORD-7781. '), refundPart(C1)])],
    turn: { text: 'Checking order ORD-7781. ', calls: [C1] },
  },
  {
    file: 'ui-reasoning-signature-and-server-tool.sse',
    trap: 'UI message stream: reasoning with its signature, a server tool and its output, then a client call',
    events: [
      reasoning('A damaged book: check the policy, '), reasoning('then refund.'), text('Damaged books get a full refund. '),
      refund('toolu_01UiRefundGgHhIiJjKk'),
      ended('tool-calls', [
        thought('A damaged book: check the policy, then refund.', { anthropic: { signature: 'ErUBCkYIBxgCKkDk3q1Yb5nXc7Vz9pLm2Qr4sT6uW8yA0bC2dE4fG6hI8jK0lM2nO4pQ6rS8tU0vW2xY4zA6bC8dE0fG2hI4jKEgxOtY' } }),
        callPart(uiSearch, 'web_search', { query: 'bookshop damaged book refund' }, { providerExecuted: true }),
        resultPart(uiSearch, 'web_search', {
          type: 'json',
          value: [{ url: 'https://example.com/returns', title: 'Returns and refunds', encryptedContent: 'EpYCCioIBxgCIiRiZjM0NTYxMi1hYmNkLTQ3ZWYtOTAxMi0zNDU2Nzg5MGFiY2QSDB1m', type: 'web_search_result' }],
        }),
        textPart('Damaged books get a full refund. '),
        refundPart('toolu_01UiRefundGgHhIiJjKk'),
      ]),
    ],
    turn: { text: 'Damaged books get a full refund. ', calls: ['toolu_01UiRefundGgHhIiJjKk'] },
  },
  {
    file: 'ui-error.sse',
    trap: 'UI message stream: a masked errorText, retryable',
    events: [text('Checking order')],
    error: (error) => {
      providerError({ retryable: true, code: 'upstream', upstreamCode: undefined })(error);
      expect((error as Error).message).toBe('ai-sdk: An error occurred.');
    },
  },
  {
    file: 'ui-abort.sse',
    trap: 'UI message stream: abort',
    events: [text('Checking order')],
    error: providerError({ retryable: false, code: 'upstream', upstreamCode: 'aborted' }),
  },
  {
    file: 'ui-reset-step.sse',
    trap: 'UI message stream: reset-step before a step attempt (ignored) and after a failed one (a retry); the output is the last attempt\'s',
    events: [
      text('Refunding the dam'), retrying('reset-step'), text('Refund started.'), refund(C1),
      ended('tool-calls', [textPart('Refund started.'), refundPart(C1)]),
    ],
    turn: { text: 'Refund started.', calls: [C1] },
  },
  {
    file: 'ui-crlf-unicode.sse',
    trap: 'UI message stream: CRLF framing, unicode split across chunks, a finish without finishReason',
    events: [
      text('Refund for Zoe'), text('\u0308 \u{1F469}'), text('\u200d\u{1F4BB} 注文番号 ORD-7781.'),
      ended('stop', [textPart('Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} 注文番号 ORD-7781.')]),
    ],
    turn: { text: 'Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} 注文番号 ORD-7781.', calls: [] },
  },
  {
    file: 'ui-tool-input-error.sse',
    trap: 'UI message stream: tool-input-error, retryable, never released',
    events: [],
    error: providerError({ retryable: true, code: 'upstream', upstreamCode: 'invalid_tool_call' }),
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
    error: providerError({ retryable: false, code: 'upstream', upstreamCode: 'model_not_found' }),
  },
  {
    file: 'error-content-policy.jsonl',
    trap: "a Responses error with code content_policy_violation that the SDK flags isRetryable: the code decides",
    events: [text('I can help with')],
    error: providerError({ retryable: false, code: 'upstream', upstreamCode: 'content_policy_violation', status: 500 }),
  },
  {
    file: 'error-unimplemented.jsonl',
    trap: 'a Gemini APICallError, HTTP 501 UNIMPLEMENTED, isRetryable: the code decides before the 5xx status',
    events: [],
    error: providerError({ retryable: false, code: 'upstream', upstreamCode: 'UNIMPLEMENTED', status: 501 }),
  },
  {
    file: 'error-insufficient-quota.jsonl',
    trap: 'an APICallError with HTTP 429 and isRetryable, whose body says insufficient_quota: not retryable',
    events: [],
    error: providerError({ retryable: false, code: 'upstream', upstreamCode: 'insufficient_quota', status: 429 }),
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

  it('a stream cut before finish is a retryable missing-finish TurnError with requireFinish', () => {
    const cut = fixture('text-and-tool.jsonl').slice(0, -2);
    const result = collect(from(cut).pipe(aiSdkParts(), assembleToolCalls(), requireFinish()));
    expectTurnError(result.error, 'missing-finish');
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
    expect(result.error).toMatchObject({ code: 'upstream', upstreamCode: 'aborted', retryable: false });
  });
});

describe('aiSdkParts: reasoning, the output, response ids, usage details', () => {
  const run = (parts: unknown[]) => collect(from(parts as AiSdkStreamPart[]).pipe(aiSdkParts()));
  const end = { type: 'finish', finishReason: 'stop' };

  it("a retried attempt: its reasoning and output replace the abandoned attempt's", () => {
    const whole = fixture('anthropic-thinking-signature-redacted-then-tool.jsonl');
    const cut = [
      ...whole.slice(0, 4),
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    ];
    const states = collect(attempts(cut, whole).pipe(retriedTurn(aiSdkParts(), turnId)));
    expect(states.error).toBeUndefined();
    const turn = states.values.at(-1);
    expect(turn?.reasoning).toBe(
      'The customer says the book arrived damaged. Order ORD-7781 qualifies for a full refund.',
    );
    expect(turn?.responseId).toBe('msg_01K2JbSUMYhez5RHoK9ZCj9U');
    const finishOf = cases
      .find((c) => c.file === 'anthropic-thinking-signature-redacted-then-tool.jsonl')
      ?.events.at(-1);
    expect(turn?.finish).toEqual({ ...finishOf, attempt: 2 });
    // the abandoned attempt's reasoning was shown, then dropped by the reset
    expect(states.values.some((state) => state.attempt === 1 && state.reasoning !== '')).toBe(true);
  });

  it('each attempt gets an output of its own: never one object shared by two subscriptions', () => {
    const source = from(fixture('text-and-tool.jsonl')).pipe(aiSdkParts());
    const first = collect(source).values.at(-1) as FinishEvent;
    const second = collect(source).values.at(-1) as FinishEvent;
    expect(second).toEqual(first);
    expect(second.output).not.toBe(first.output);
  });

  it('the deprecated usage fields (cachedInputTokens, reasoningTokens) count when the details are absent', () => {
    const step = {
      type: 'finish-step',
      usage: { inputTokens: 10, outputTokens: 6, cachedInputTokens: 4, reasoningTokens: 2 },
    };
    expect(run([step, end]).values).toEqual([tokens(10, 6, 4, 2), ended('stop', [])]);
  });

  it('a response-metadata part (a model stream part) names the response when no finish-step does', () => {
    expect(run([{ type: 'response-metadata', id: 'resp_7', modelId: 'o4-mini' }, end]).values).toEqual([
      ended('stop', [], { responseId: 'resp_7' }),
    ]);
  });

  it('compaction (raw) is a pause too; a pause with a released call is not', () => {
    const paused = run([{ type: 'finish', finishReason: 'other', rawFinishReason: 'compaction' }]).values;
    expect(paused).toEqual([ended('other', [], { raw: 'compaction', paused: true })]);
    const refundCall = {
      type: 'tool-call',
      toolCallId: 'c1',
      toolName: 'issue_refund',
      input: helpDesk.refundArgs,
    };
    const withCall = run([
      refundCall,
      { type: 'finish', finishReason: 'stop', rawFinishReason: 'pause_turn' },
    ]);
    expect(withCall.values.at(-1)).toMatchObject({ reason: 'tool-calls', raw: 'pause_turn' });
    expect(withCall.values.at(-1)).not.toHaveProperty('paused');
  });

  it('text and reasoning without start parts, ends that bring the metadata, a start-step that closes open parts', () => {
    const parts = [
      { type: 'reasoning-delta', id: 'r', text: 'Thinking.' },
      { type: 'reasoning-end', id: 'r', providerMetadata: { google: { thoughtSignature: 'sig-1' } } },
      { type: 'text-delta', id: '0', text: 'One.' },
      { type: 'start-step' },
      { type: 'text-delta', id: '0', text: 'Two.' },
      {
        type: 'reasoning-end',
        id: 'x',
        providerMetadata: { openai: { itemId: 'rs_2', reasoningEncryptedContent: 'enc' } },
      },
      end,
    ];
    expect(run(parts).values).toEqual([
      reasoning('Thinking.'),
      text('One.'),
      text('Two.'),
      ended('stop', [
        thought('Thinking.', { google: { thoughtSignature: 'sig-1' } }),
        textPart('One.'),
        textPart('Two.'),
        thought('', { openai: { itemId: 'rs_2', reasoningEncryptedContent: 'enc' } }),
      ]),
    ]);
  });

  it("the output is JSON data: a tool result's Date as its JSON, undefined as null; a preliminary result waits", () => {
    const lookup = {
      type: 'tool-call',
      toolCallId: 'c1',
      toolName: 'lookup_order',
      input: { order_id: 'ORD-7781' },
    };
    const at = new Date('2025-10-09T08:53:20.000Z');
    const parts = [
      lookup,
      {
        type: 'tool-result',
        toolCallId: 'c1',
        toolName: 'lookup_order',
        output: { step: 1 },
        preliminary: true,
      },
      {
        type: 'tool-result',
        toolCallId: 'c1',
        toolName: 'lookup_order',
        output: { shippedAt: at, note: undefined },
      },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'notify', input: {} },
      { type: 'tool-result', toolCallId: 'c2', toolName: 'notify', output: undefined },
      { type: 'tool-call', toolCallId: 'c3', toolName: 'notify', input: {} },
      { type: 'tool-error', toolCallId: 'c3', toolName: 'notify', error: new Error('mail server down') },
      { type: 'tool-result', toolCallId: 'c9', toolName: 'not_in_this_stream', output: 'x' },
      { type: 'finish-step' },
      end,
    ];
    expect(run(parts).values).toEqual([
      ended('stop', [
        callPart('c1', 'lookup_order', { order_id: 'ORD-7781' }),
        callPart('c2', 'notify', {}),
        callPart('c3', 'notify', {}),
        resultPart('c1', 'lookup_order', { type: 'json', value: { shippedAt: '2025-10-09T08:53:20.000Z' } }),
        resultPart('c2', 'notify', { type: 'json', value: null }),
        resultPart('c3', 'notify', { type: 'error-text', value: 'mail server down' }),
      ]),
    ]);
  });

  it('a provider-run tool error is error-json; a UI output error too; a string result is text', () => {
    const search = {
      type: 'tool-call',
      toolCallId: 's1',
      toolName: 'web_search',
      input: { query: 'q' },
      providerExecuted: true,
    };
    const parts = [
      search,
      {
        type: 'tool-error',
        toolCallId: 's1',
        toolName: 'web_search',
        error: { type: 'web_search_tool_result_error', errorCode: 'max_uses_exceeded' },
        providerExecuted: true,
      },
      {
        type: 'tool-input-available',
        toolCallId: 's2',
        toolName: 'web_fetch',
        input: { url: 'https://example.com' },
        providerExecuted: true,
      },
      { type: 'tool-output-error', toolCallId: 's2', errorText: 'unavailable', providerExecuted: true },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup_order', input: {} },
      { type: 'tool-result', toolCallId: 'c1', toolName: 'lookup_order', output: 'delivered' },
      end,
    ];
    expect(run(parts).values).toEqual([
      ended('stop', [
        callPart('s1', 'web_search', { query: 'q' }, { providerExecuted: true }),
        resultPart('s1', 'web_search', {
          type: 'error-json',
          value: { type: 'web_search_tool_result_error', errorCode: 'max_uses_exceeded' },
        }),
        callPart('s2', 'web_fetch', { url: 'https://example.com' }, { providerExecuted: true }),
        resultPart('s2', 'web_fetch', { type: 'error-json', value: 'unavailable' }),
        callPart('c1', 'lookup_order', {}),
        resultPart('c1', 'lookup_order', { type: 'text', value: 'delivered' }),
      ]),
    ]);
  });

  it.each([
    [
      'providerMetadata a string',
      { type: 'text-delta', id: '0', text: 'a', providerMetadata: 'sig' },
      'providerMetadata',
    ],
    ['a reasoning text that is a number', { type: 'reasoning-delta', id: '0', text: 5 }, 'text'],
    ['a response id that is a number', { type: 'finish-step', response: { id: 7 } }, 'response.id'],
    [
      'inputTokenDetails a number',
      { type: 'finish-step', usage: { inputTokenDetails: 3 } },
      'usage.inputTokenDetails',
    ],
    [
      'a reasoning count that is a string',
      { type: 'finish-step', usage: { outputTokenDetails: { reasoningTokens: '40' } } },
      'usage.outputTokenDetails.reasoningTokens',
    ],
    [
      'a tool output that is not JSON (a BigInt)',
      { type: 'tool-result', toolCallId: 'c1', toolName: 'f', output: 10n },
      'output',
    ],
    [
      'a provider-run call without toolCallId',
      { type: 'tool-call', toolName: 'web_search', input: {}, providerExecuted: true },
      'toolCallId',
    ],
  ])('%s is a ProviderError naming the field', (_what, part, field) => {
    const parts = [{ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: {} }, part, end];
    payloadError(field)(run(parts).error);
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
    expect(error).toMatchObject({ code: 'upstream', retryable: false, status: 400, payload: thrown });
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
      code: 'upstream',
      upstreamCode: 'insufficient_quota',
      payload: thrown,
    });
    const reset = Object.assign(new Error('Cannot connect to API: other side closed'), { isRetryable: true });
    const cut = collect(
      concat(
        from([]),
        throwError(() => reset),
      ).pipe(aiSdkParts()),
    ).error;
    expect(cut).toMatchObject({
      retryable: true,
      code: 'upstream',
      upstreamCode: undefined,
      status: undefined,
      payload: reset,
    });
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

  const call1 = { toolCallId: 'c1', toolName: 'issue_refund', input: helpDesk.refundArgs };
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
  ])('%s is a ProviderError, never a call or a drop', (_what, part, field) => {
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
    expect(result.values.at(-1)).toEqual(cases[0]?.events.at(-1));
    expect(result.values.filter((e) => e.type === 'text')).toHaveLength(2);
    expect(result.completed).toBe(true);
  });

  it('a tool-call denied by the user is not released', () => {
    const parts = [
      { type: 'tool-call', toolCallId: 'c1', toolName: 'issue_refund', input: helpDesk.refundArgs },
      { type: 'tool-output-denied', toolCallId: 'c1' },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'tool-calls' },
    ] as AiSdkStreamPart[];
    expect(collect(from(parts).pipe(aiSdkParts())).values).toEqual([
      ended('tool-calls', [
        callPart('c1', 'issue_refund', helpDesk.refundArgs),
        resultPart('c1', 'issue_refund', { type: 'execution-denied' }),
      ]),
    ]);
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
      ended('other', []),
    ]);
  });
});

// biome-ignore format: an aligned value table
const sample: Record<'a' | 'b' | 'c', AiSdkStreamPart> = {
  a: { type: 'text-delta', text: 'Refund ' } as AiSdkStreamPart,
  b: { type: 'text-delta', text: 'started.' } as AiSdkStreamPart,
  c: { type: 'finish', finishReason: 'stop', rawFinishReason: 'end_turn' } as AiSdkStreamPart,
};
const sampleOut = {
  a: text('Refund '),
  b: text('started.'),
  c: ended('stop', [textPart('Refund started.')], { raw: 'end_turn' }),
};

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
        const expected = upstreamProviderError('ai-sdk', 'An error occurred.', {
          retryable: true,
          payload: e,
        });
        expectObservable(source.pipe(aiSdkParts())).toBe('-a-#', sampleOut, expected);
        expectSubscriptions(source.subscriptions).toBe('^--!');
      },
    ));
});
