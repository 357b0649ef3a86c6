// anthropicMessages(): every fixture in test/fixtures/anthropic, one per trap of wire-formats.md §3, through
// the adapter and assembleToolCalls (and the clean turn); error classification; the standard operator checks.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  assembleToolCalls,
  CleanturnError,
  effectKey,
  type FinishReason,
  requireFinish,
  retryAsEvents,
} from 'cleanturn';
import { anthropicMessages, ProviderError } from 'cleanturn/providers';
import { call, delta, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { concat, defer, from, Observable, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { AnthropicOutput, AnthropicStreamEvent } from '../../src/providers/anthropicMessages.js';
import type { ProviderErrorCode } from '../../src/providers/errors.js';
import { upstreamProviderError } from '../../src/providers/errors.js';
import type { FinishEvent } from '../../src/types.js';
import { collect } from '../support/collect.js';
import { expectTurnError } from '../support/errors.js';
import { attempts, type FixtureCase, fixtureChecks, retriedTurn } from '../support/providerTurns.js';
import { readSseJson } from '../support/sse.js';
import { standardChecks } from '../support/standardChecks.js';

const turnId = 'turn-42';
const dir = fileURLToPath(new URL('../fixtures/anthropic/', import.meta.url));

/** The parsed events of a fixture file. */
const fixture = (name: string) => readSseJson(`${dir}${name}`) as AnthropicStreamEvent[];

const refund = (id: string) => call(id, 'issue_refund', helpDesk.refundArgs);
const T1 = 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP';

const retryable = (code: string) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderError);
  expect(error).toMatchObject({
    provider: 'anthropic-messages',
    code: 'upstream',
    upstreamCode: code,
    retryable: true,
  });
};

/** A payload the adapter cannot read: a ProviderError naming the field (only unknown-reference retries). */
const unreadable = (code: ProviderErrorCode, field: string) => (error: unknown) => {
  expect(error).toBeInstanceOf(ProviderError);
  expect(error).toMatchObject({
    operator: 'anthropicMessages',
    code,
    field,
    retryable: code === 'unknown-reference',
  });
};

const msg = 'msg_01K2JbSUMYhez5RHoK9ZCj9U';
const direct = { type: 'direct' };

/** Usage as Anthropic reports it: with the cache reads it counts (0 in most recordings) as cachedInputTokens. */
const cached = (
  inputTokens: number,
  outputTokens: number,
  cachedInputTokens = 0,
  reasoningTokens?: number,
) => ({
  ...usage(inputTokens, outputTokens),
  cachedInputTokens,
  ...(reasoningTokens === undefined ? {} : { reasoningTokens }),
});

/** A finish with the message id and the message's content blocks in index order. */
const done = (
  reason: FinishReason,
  raw: string,
  responseId: string,
  content: readonly object[],
  paused = false,
): FinishEvent => ({
  ...finish(reason, raw),
  ...(paused ? { paused } : {}),
  responseId,
  output: { format: 'anthropic-messages', content } as unknown as AnthropicOutput,
});

const textBlock = (text: string) => ({ type: 'text', text });
/** A tool_use block as the stream sent it: with `caller: { type: 'direct' }` unless `caller` is null. */
const toolUse = (id: string, name: string, input: unknown, caller: object | null = direct) => ({
  type: 'tool_use',
  id,
  name,
  input,
  ...(caller === null ? {} : { caller }),
});

// biome-ignore format: a table of fixtures
const cases: FixtureCase[] = [
  {
    file: 'text-and-tool.sse',
    trap: 'text, a ping, a tool_use whose first fragment is empty and whose arguments arrive in three pieces',
    events: [
      cached(412, 2), text('Checking order'), text(' ORD-7781. '), refund(T1), cached(412, 58),
      done('tool-calls', 'tool_use', msg, [textBlock('Checking order ORD-7781. '), toolUse(T1, 'issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: [T1] },
  },
  {
    file: 'no-arg-tool.sse',
    trap: 'a tool without arguments: every fragment empty means {}',
    events: [
      cached(412, 2), text('Let me list your orders.'), cached(412, 31), call('toolu_01NoArgs5kLm2Q8rT7vW3xYz', 'list_orders', {}),
      done('tool-calls', 'tool_use', msg, [textBlock('Let me list your orders.'), toolUse('toolu_01NoArgs5kLm2Q8rT7vW3xYz', 'list_orders', {})]),
    ],
    turn: { text: 'Let me list your orders.', calls: ['toolu_01NoArgs5kLm2Q8rT7vW3xYz'] },
  },
  {
    file: 'whole-args-first.sse',
    trap: 'the whole arguments in the first fragment',
    events: [
      cached(412, 2), refund('toolu_01WholeA9bC8dE7fG6hJ5kL'), cached(412, 40),
      done('tool-calls', 'tool_use', msg, [toolUse('toolu_01WholeA9bC8dE7fG6hJ5kL', 'issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: '', calls: ['toolu_01WholeA9bC8dE7fG6hJ5kL'] },
  },
  {
    file: 'parallel-calls.sse',
    trap: 'two parallel calls: tool_use blocks at indexes 1 and 2 after a text block',
    events: [
      cached(412, 2), text('Looking up both orders.'),
      call('toolu_01Par1aaaaaaaaaaaaaaaaaaa', 'lookup_order', { order_id: 'ORD-7781' }),
      call('toolu_01Par2bbbbbbbbbbbbbbbbbbb', 'lookup_order', { order_id: 'ORD-7782' }),
      cached(412, 77),
      done('tool-calls', 'tool_use', msg, [
        textBlock('Looking up both orders.'),
        toolUse('toolu_01Par1aaaaaaaaaaaaaaaaaaa', 'lookup_order', { order_id: 'ORD-7781' }),
        toolUse('toolu_01Par2bbbbbbbbbbbbbbbbbbb', 'lookup_order', { order_id: 'ORD-7782' }),
      ]),
    ],
    turn: { text: 'Looking up both orders.', calls: ['toolu_01Par1aaaaaaaaaaaaaaaaaaa', 'toolu_01Par2bbbbbbbbbbbbbbbbbbb'] },
  },
  {
    file: 'overloaded-after-text.sse',
    trap: 'event: error with overloaded_error after some text: a retryable ProviderError',
    events: [cached(412, 2), text('Checking order'), text(' ORD-7781. Refunding the dam')],
    error: retryable('overloaded_error'),
  },
  {
    file: 'invalid-request-error.sse',
    trap: 'an in-stream invalid_request_error: not retryable',
    events: [cached(412, 2)],
    error: (error) => {
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ code: 'upstream', upstreamCode: 'invalid_request_error', retryable: false });
      expect((error as Error).message).toBe('anthropic-messages: messages.1.content.0: tool_use ids must be unique');
    },
  },
  {
    file: 'duplicate-message-start.sse',
    trap: 'a duplicated message_start with the same id is ignored',
    events: [cached(412, 2), text('Refund started.'), cached(412, 9), done('stop', 'end_turn', msg, [textBlock('Refund started.')])],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'spliced-message-start.sse',
    trap: 'a spliced stream: another message_start with a new id while a tool_use block is open',
    events: [cached(412, 2), text('Checking order ORD-7781. ')],
    error: retryable('spliced_stream'),
  },
  {
    file: 'duplicate-tool-start.sse',
    trap: 'a duplicated content_block_start of the same tool_use block is ignored',
    events: [cached(412, 2), refund(T1), cached(412, 40), done('tool-calls', 'tool_use', msg, [toolUse(T1, 'issue_refund', helpDesk.refundArgs)])],
    turn: { text: '', calls: [T1] },
  },
  {
    file: 'unicode-split.sse',
    trap: 'unicode split across deltas: a combining mark, a ZWJ emoji, and \\u escapes split across partial_json',
    events: [
      cached(412, 2), text('Refund for Zoe'), text('\u0308 \u{1F469}'), text('\u200d\u{1F4BB} done. 注文'), text('番号 ORD-7781.'),
      call('toolu_01Unicode7hJ8kL9mN0pQ1rS2', 'add_note', { order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' }), cached(412, 44),
      done('tool-calls', 'tool_use', msg, [
        textBlock('Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} done. 注文番号 ORD-7781.'),
        toolUse('toolu_01Unicode7hJ8kL9mN0pQ1rS2', 'add_note', { order_id: 'ORD-7781', note: 'café \u{1F4A9} ☕ 注文' }),
      ]),
    ],
    turn: { text: 'Refund for Zoe\u0308 \u{1F469}\u200d\u{1F4BB} done. 注文番号 ORD-7781.', calls: ['toolu_01Unicode7hJ8kL9mN0pQ1rS2'] },
  },
  {
    file: 'crlf.sse',
    trap: 'CRLF framing',
    events: [cached(412, 2), text('Refund started.'), cached(412, 9), done('stop', 'end_turn', msg, [textBlock('Refund started.')])],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'missing-optional-fields.sse',
    trap: 'data-only framing (no event: lines) and missing optional fields (cache counts, caller, stop_sequence)',
    events: [
      usage(97, 1), text('One moment.'), call('toolu_01MinimalCallQwErTyUiOpAs', 'lookup_order', { order_id: 'ORD-7781' }), usage(97, 25),
      done('tool-calls', 'tool_use', 'msg_01MinimalFieldsAbCdEfGhIj', [
        textBlock('One moment.'),
        toolUse('toolu_01MinimalCallQwErTyUiOpAs', 'lookup_order', { order_id: 'ORD-7781' }, null),
      ]),
    ],
    turn: { text: 'One moment.', calls: ['toolu_01MinimalCallQwErTyUiOpAs'] },
  },
  {
    file: 'max-tokens-mid-call.sse',
    trap: 'max_tokens in the middle of a call: the cut arguments are a retryable tool-call-invalid-json TurnError',
    events: [cached(412, 2), cached(412, 1024)],
    error: (error) => {
      expectTurnError(error, 'tool-call-invalid-json');
      expect(error).toMatchObject({ id: 'toolu_01CutOffArgsZxCvBnMaSdFg', argsText: '{"order_id":"ORD-7781","amo', retryable: true });
    },
  },
  {
    file: 'pause-turn.sse',
    trap: 'pause_turn after a server tool: paused, the server tool and its result kept as blocks, never a client call',
    events: [
      cached(412, 2), text('Let me check the return policy.'), cached(412, 120),
      done('other', 'pause_turn', msg, [
        textBlock('Let me check the return policy.'),
        { type: 'server_tool_use', id: 'srvtoolu_01WebSearchAaBbCcDdEe', name: 'web_search', input: { query: 'bookshop return policy damaged' }, caller: direct },
        {
          type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01WebSearchAaBbCcDdEe', caller: direct,
          content: [{ type: 'web_search_result', title: 'Returns', url: 'https://example.com/returns', encrypted_content: 'EqQBCkgIARABGAIiQ', page_age: null }],
        },
      ], true),
    ],
    turn: { text: 'Let me check the return policy.', calls: [] },
  },
  {
    file: 'thinking.sse',
    trap: 'thinking deltas are reasoning, never answer text; the signature stays on its block',
    events: [
      cached(412, 2), reasoning('The order is damaged, so a full refund applies.'), text('Refund started.'), cached(412, 64),
      done('stop', 'end_turn', msg, [
        { type: 'thinking', thinking: 'The order is damaged, so a full refund applies.', signature: 'EuYBCkQYAiJAb3Nl' },
        textBlock('Refund started.'),
      ]),
    ],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'thinking-signature-then-tool.sse',
    trap: 'extended thinking with tools: thinking in two deltas and its signature, then text and the call; cache reads and thinking tokens in usage',
    events: [
      cached(412, 4, 256), reasoning('The book of ORD-7781 arrived damaged'), reasoning(', so the policy allows a full refund.'),
      text('Checking order'), text(' ORD-7781. '), refund('toolu_01ThinkCall4Rt5Yu6Io7Pa8S'), cached(412, 131, 256, 38),
      done('tool-calls', 'tool_use', 'msg_01ThinkSig7Qw2Er4Ty6Ui8Op', [
        {
          type: 'thinking',
          thinking: 'The book of ORD-7781 arrived damaged, so the policy allows a full refund.',
          signature: 'ErUBCkYIBRgCIkDhRfund7781SigA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1vW2xY3zA4bC5dE6fG7hI8jK9lM0nOEgz+PqRsTuVwXyZ01234GgxSIGNsYXVkZS1zb25uZXQ=',
        },
        textBlock('Checking order ORD-7781. '),
        toolUse('toolu_01ThinkCall4Rt5Yu6Io7Pa8S', 'issue_refund', helpDesk.refundArgs, null),
      ]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['toolu_01ThinkCall4Rt5Yu6Io7Pa8S'] },
  },
  {
    file: 'redacted-thinking-then-tool.sse',
    trap: 'redacted_thinking (its data in content_block_start) is kept with no event; the thinking after it is reasoning',
    events: [
      cached(412, 3), reasoning('A damaged book gets a full refund.'), refund('toolu_01RedactCall2Wq3Er4Ty5Ui6'), cached(412, 97),
      done('tool-calls', 'tool_use', 'msg_01RedactQ9w8E7r6T5y4U3i2O1', [
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN0OqRsTuVwXy+ZaBcD' },
        { type: 'thinking', thinking: 'A damaged book gets a full refund.', signature: 'EqQBCkgIAxABGAIiQGRlZHVjZWQgcmVmdW5kIGZvciBPUkQtNzc4MRIM7rTyUi8oPa9sDfGhIjBkYW1hZ2VkIGJvb2s=' },
        toolUse('toolu_01RedactCall2Wq3Er4Ty5Ui6', 'issue_refund', helpDesk.refundArgs, null),
      ]),
    ],
    turn: { text: '', calls: ['toolu_01RedactCall2Wq3Er4Ty5Ui6'] },
  },
  {
    file: 'web-search-citations.sse',
    trap: 'a web search the server runs (input streamed as input_json_delta), its result block, and text with citations_delta: no client call, stop',
    events: [
      cached(2037, 1), text('Damaged books are refunded in full: '), text('a damaged item is refunded'), text(' within 30 days.'), cached(6214, 92),
      done('stop', 'end_turn', 'msg_01WebCite3Zx4Cv5Bn6Mq7Wr8', [
        { type: 'server_tool_use', id: 'srvtoolu_01WebCite9Lk8Jh7Gf6Ds5', name: 'web_search', input: { query: 'bookshop return policy damaged' } },
        {
          type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01WebCite9Lk8Jh7Gf6Ds5',
          content: [
            { type: 'web_search_result', title: 'Returns and refunds', url: 'https://books.example.com/help/returns', encrypted_content: 'EqgfCioIARgBIiQ3YmJlYjM0Zi1hNGIxLTQ3ZDItOTQ2YS1kNWRmNjA0ZTZiZjUSDF2ZXdyZXR1cm5z', page_age: '2 weeks ago' },
            { type: 'web_search_result', title: 'Damaged items', url: 'https://books.example.com/help/damaged', encrypted_content: 'Ev0YCioIARgBIiQ3YmJlYjM0Zi1hNGIxLTQ3ZDItOTQ2YS1kNWRmNjA0ZTZiZjUSDGRhbWFnZWQ=', page_age: null },
          ],
        },
        textBlock('Damaged books are refunded in full: '),
        {
          type: 'text', text: 'a damaged item is refunded within 30 days.',
          citations: [{
            type: 'web_search_result_location', cited_text: 'Items that arrive damaged are refunded in full within 30 days.',
            url: 'https://books.example.com/help/damaged', title: 'Damaged items',
            encrypted_index: 'Eo8BCioIARgBIiQ3YmJlYjM0Zi1hNGIxLTQ3ZDItOTQ2YS1kNWRmNjA0ZTZiZjUSDKo=',
          }],
        },
      ]),
    ],
    turn: { text: 'Damaged books are refunded in full: a damaged item is refunded within 30 days.', calls: [] },
  },
  {
    file: 'code-execution-server-tools.sse',
    trap: 'code execution the server runs: server_tool_use and bash_code_execution_tool_result kept as blocks, no client call',
    events: [
      cached(2263, 8), text('The refund for both copies is 49.98.'), cached(8050, 171),
      done('stop', 'end_turn', 'msg_01CodeExec5Tg6Yh7Uj8Ik9Ol', [
        { type: 'server_tool_use', id: 'srvtoolu_01CodeExec1Qa2Ws3Ed4Rf', name: 'bash_code_execution', input: { command: "python -c 'print(24.99 * 2)'" } },
        {
          type: 'bash_code_execution_tool_result', tool_use_id: 'srvtoolu_01CodeExec1Qa2Ws3Ed4Rf',
          content: { type: 'bash_code_execution_result', stdout: '49.98\n', stderr: '', return_code: 0, content: [] },
        },
        textBlock('The refund for both copies is 49.98.'),
      ]),
    ],
    turn: { text: 'The refund for both copies is 49.98.', calls: [] },
  },
  {
    file: 'mcp-tool-use.sse',
    trap: 'an MCP tool the server calls (mcp_tool_use, input streamed) and its mcp_tool_result: kept as blocks, no client call',
    events: [
      cached(589, 1), text('Order ORD-7781 was delivered damaged.'), cached(1250, 83),
      done('stop', 'end_turn', 'msg_01McpTool8Ju7Hy6Gt5Fr4De', [
        { type: 'mcp_tool_use', id: 'mcptoolu_01Orders3Ki4Lo5Pl6Mn', name: 'lookup_order', input: { order_id: 'ORD-7781' }, server_name: 'orders' },
        { type: 'mcp_tool_result', tool_use_id: 'mcptoolu_01Orders3Ki4Lo5Pl6Mn', is_error: false, content: [{ type: 'text', text: 'ORD-7781: one book, delivered damaged' }] },
        textBlock('Order ORD-7781 was delivered damaged.'),
      ]),
    ],
    turn: { text: 'Order ORD-7781 was delivered damaged.', calls: [] },
  },
  {
    file: 'compaction-pause.sse',
    trap: 'stop_reason compaction: paused, the compaction block (content and encrypted_content from compaction_delta) kept',
    events: [
      cached(60385, 5), cached(60385, 412),
      done('other', 'compaction', 'msg_01Compact2Ws3Ed4Rf5Tg6Yh', [
        {
          type: 'compaction',
          content: '## Summary\nThe customer asked for a refund of ORD-7781 (a damaged book). The refund was issued in full.',
          encrypted_content: 'EuEBCkYIBxgCKkCsummary7781opaqueQwErTyUiOpAsDfGhJkLzXcVbNm==',
        },
      ], true),
    ],
    turn: { text: '', calls: [] },
  },
  {
    file: 'unknown-block-type.sse',
    trap: 'a content block of a type the adapter does not know: kept as content_block_start sent it, its unknown delta ignored',
    events: [
      cached(412, 2), text('Refund started.'), cached(412, 9),
      done('stop', 'end_turn', 'msg_01FutureBlk6Yh7Uj8Ik9Ol0P', [
        { type: 'memory_recall', memory_id: 'mem_01Returns', summary: 'The customer prefers refunds to the card.' },
        textBlock('Refund started.'),
      ]),
    ],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'truncated.sse',
    trap: 'the connection closed before message_stop: no finish',
    events: [cached(412, 2), text('Refund started.'), cached(412, 9)],
  },
  {
    file: 'tool-use-end-turn.sse',
    trap: 'a tool call in a message that ends with end_turn: the call decides',
    events: [
      cached(412, 2), refund('toolu_01EndTurnCallHjKlZxCvBn'), cached(412, 40),
      done('tool-calls', 'end_turn', msg, [toolUse('toolu_01EndTurnCallHjKlZxCvBn', 'issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: '', calls: ['toolu_01EndTurnCallHjKlZxCvBn'] },
  },
  {
    file: 'refusal.sse',
    trap: 'refusal is content-filter',
    events: [cached(412, 2), text("I can't help with that."), cached(412, 12), done('content-filter', 'refusal', msg, [textBlock("I can't help with that.")])],
    turn: { text: "I can't help with that.", calls: [] },
  },
  {
    file: 'cumulative-usage.sse',
    trap: 'cumulative usage: message_delta repeats input and cache counts; null keeps the last value',
    events: [cached(343, 1, 200), text('Refund started.'), cached(343, 5, 200), cached(361, 9, 200), done('stop', 'end_turn', msg, [textBlock('Refund started.')])],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'unknown-types.sse',
    trap: 'unknown event types are ignored; a citations_delta stays on its text block',
    events: [
      cached(412, 2), text('Refund started.'), cached(412, 9),
      done('stop', 'end_turn', msg, [{
        type: 'text', text: 'Refund started.',
        citations: [{ type: 'char_location', cited_text: 'Returns within 30 days.', document_index: 0, document_title: 'Policy', start_char_index: 0, end_char_index: 23, file_id: null }],
      }]),
    ],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'compat-string-index.sse',
    trap: 'decimal-string indexes (a proxy): the tool_use block at "1" is read, not dropped under a tool-calls finish',
    events: [
      cached(412, 2), text('Checking order'), text(' ORD-7781. '), refund('toolu_01StrIdx7Kd2Pq9Wm4Xc8Rt5'), cached(412, 58),
      done('tool-calls', 'tool_use', 'msg_01StrIdx4Hq8Zp2Lw6Tn3Vb9', [textBlock('Checking order ORD-7781. '), toolUse('toolu_01StrIdx7Kd2Pq9Wm4Xc8Rt5', 'issue_refund', helpDesk.refundArgs)]),
    ],
    turn: { text: 'Checking order ORD-7781. ', calls: ['toolu_01StrIdx7Kd2Pq9Wm4Xc8Rt5'] },
  },
  {
    file: 'delta-unopened-block.sse',
    trap: 'input_json_delta for a block never opened (its start was lost): a retryable unknown-reference',
    events: [cached(412, 2), text('Checking order ORD-7781. ')],
    error: unreadable('unknown-reference', 'index'),
  },
  {
    file: 'stop-unopened-block.sse',
    trap: 'content_block_stop for a block never opened: a retryable unknown-reference',
    events: [cached(412, 2), text('Refund started.')],
    error: unreadable('unknown-reference', 'index'),
  },
  {
    file: 'tool-name-missing.sse',
    trap: 'a tool_use block without a name: invalid-field, not a nameless call',
    events: [cached(412, 2), text('Checking order ORD-7781. ')],
    error: unreadable('invalid-field', 'content_block.name'),
  },
  {
    file: 'compat-tool-name-number.sse',
    trap: 'a tool_use block whose name is a number: invalid-field',
    events: [cached(412, 2)],
    error: unreadable('invalid-field', 'content_block.name'),
  },
  {
    file: 'compat-partial-json-number.sse',
    trap: 'partial_json that is a number: invalid-field, never a call with {}',
    events: [cached(412, 2)],
    error: unreadable('invalid-field', 'delta.partial_json'),
  },
  {
    file: 'two-message-deltas.sse',
    trap: 'two message_delta events, the first without a stop reason: usage from both, the last reason',
    events: [cached(412, 2), text('Refund started.'), cached(412, 5), cached(412, 9), done('stop', 'end_turn', 'msg_01TwoDeltas6Bv9Nm3Qa7Ws1', [textBlock('Refund started.')])],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'after-message-stop.sse',
    trap: 'a second message after message_stop (the end marker) is ignored',
    events: [cached(412, 2), text('Refund started.'), cached(412, 9), done('stop', 'end_turn', 'msg_01AfterStop4Xs7Dc1Fv5Gb8', [textBlock('Refund started.')])],
    turn: { text: 'Refund started.', calls: [] },
  },
  {
    file: 'api-error-mid-call.sse',
    trap: 'an api_error while a call streams: retryable, and the cut call is never released',
    events: [cached(412, 2), text('Refunding now.')],
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
    // The cut arguments stay as the text that streamed: the attempt fails in assembleToolCalls anyway.
    expect(result.values.at(-1)).toEqual(
      done('length', 'max_tokens', msg, [
        toolUse('toolu_01CutOffArgsZxCvBnMaSdFg', 'issue_refund', '{"order_id":"ORD-7781","amo'),
      ]),
    );
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

  it('a truncated stream is a retryable missing-finish TurnError with requireFinish', () => {
    const result = collect(
      from(fixture('truncated.sse')).pipe(anthropicMessages(), assembleToolCalls(), requireFinish()),
    );
    expectTurnError(result.error, 'missing-finish');
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
    expect(result.error).toMatchObject({
      retryable: false,
      code: 'upstream',
      upstreamCode: 'invalid_request_error',
    });
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
    expect(error).toMatchObject({
      code: 'upstream',
      upstreamCode: type,
      retryable: expected,
      payload: errorEvent(type),
    });
  });

  it('an error event without details is still a retryable ProviderError', () => {
    expect(errorOf([{ type: 'error' }])).toMatchObject({
      retryable: true,
      code: 'upstream',
      upstreamCode: undefined,
    });
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
    expect(error).toMatchObject({ code: 'upstream', retryable: expected, status, payload: thrown });
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
      code: 'upstream',
      upstreamCode: 'spliced_stream',
      retryable: true,
    });
  });

  it('a tool_use block whose input arrives whole in content_block_start (a replay) keeps it', () => {
    const events: AnthropicStreamEvent[] = [
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 'toolu_r', name: 'issue_refund', input: helpDesk.refundArgs },
      },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' } },
      { type: 'message_stop' },
    ];
    const result = collect(from(events).pipe(anthropicMessages(), assembleToolCalls()));
    expect(result.values).toEqual([
      refund('toolu_r'),
      {
        ...finish('tool-calls', 'tool_use'),
        output: {
          format: 'anthropic-messages',
          content: [toolUse('toolu_r', 'issue_refund', helpDesk.refundArgs, null)],
        },
      },
    ]);
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
      cached(412, 2),
      text('Refund started.'),
      cached(412, 9),
      done('stop', 'end_turn', msg, [textBlock('Refund started.')]),
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
  c: {
    ...finish('tool-calls'),
    responseId: 'msg_1',
    output: { format: 'anthropic-messages', content: [toolUse('toolu_1', 'list_orders', {}, null)] },
  },
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
        const expected = upstreamProviderError('anthropic-messages', 'Overloaded', {
          retryable: true,
          upstreamCode: 'overloaded_error',
          payload: e,
        });
        expectObservable(source.pipe(anthropicMessages())).toBe('-a-#', sampleOut, expected);
        expectSubscriptions(source.subscriptions).toBe('^--!');
      },
    ));
});
