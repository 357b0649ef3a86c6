import { openaiResponses } from 'cleanturn/providers';
import { defineMarbles, delta, finish, reasoning, text, usage } from 'cleanturn/testing';
import { upstreamProviderError } from '../src/providers/errors.js';
import type { OpenAIResponsesEvent } from '../src/providers/openaiResponses.js';

// Events trimmed to the fields the adapter reads; a real stream also carries sequence numbers, ids and more.
const item = { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'issue_refund', arguments: '' };
const args = (fragment: string): OpenAIResponsesEvent => ({
  type: 'response.function_call_arguments.delta',
  item_id: 'fc_1',
  output_index: 1,
  delta: fragment,
});
const textDelta = (text: string): OpenAIResponsesEvent => ({
  type: 'response.output_text.delta',
  item_id: 'msg_1',
  output_index: 0,
  delta: text,
});
const summary = (index: number, fragment: string): OpenAIResponsesEvent => ({
  type: 'response.reasoning_summary_text.delta',
  item_id: 'rs_1',
  output_index: 0,
  summary_index: index,
  delta: fragment,
});
// The reasoning item as output_item.done sends it: its summary, and the encrypted reasoning that a request with
// store: false and include: ['reasoning.encrypted_content'] gets back.
const reasoningItem = {
  id: 'rs_1',
  type: 'reasoning',
  encrypted_content: 'gAAAAABpPDIV…',
  summary: [
    { type: 'summary_text', text: '**Checking the order**' },
    { type: 'summary_text', text: '**Refund policy**' },
  ],
};
const callItem = { ...item, status: 'completed', arguments: '{"order_id":"ORD-7781","amount":"full"}' };
// A web search the provider ran, and the message it led to (sent whole, as a proxy that streams no text does).
const webSearch = {
  id: 'ws_1',
  type: 'web_search_call',
  status: 'completed',
  action: { type: 'search', query: 'bookshop refund policy' },
};
const message = {
  id: 'msg_2',
  type: 'message',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', text: 'Damaged books are refunded.', annotations: [] }],
};
const flatError = { type: 'error', code: 'server_error', message: 'The server had an error.', param: null };
const failed = {
  type: 'response.failed',
  response: { status: 'failed', error: { code: 'server_error', message: 'The server had an error.' } },
};
const nestedError = {
  type: 'error',
  error: {
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    message: 'You exceeded your current quota.',
  },
};

export default defineMarbles({
  name: 'openaiResponses',
  summary:
    'Turns Responses events into neutral events: text, call fragments with a small index per item, usage and finish at the terminal event.',
  cases: [
    {
      title: 'text, a function call in fragments, then usage and finish from response.completed',
      source: /*   */ '-t-a-d-e-c---|',
      // biome-ignore format: an aligned value table
      values: {
        t: textDelta('Checking order ORD-7781. '),
        a: { type: 'response.output_item.added', output_index: 1, item },
        d: args('{"order_id":"ORD-7781",'),
        e: args('"amount":"full"}'),
        c: { type: 'response.completed', response: { status: 'completed', usage: { input_tokens: 142, output_tokens: 31 } } },
      },
      label: 'openaiResponses()',
      operator: () => openaiResponses(),
      expected: /* */ '-T-A-D-E-(UF)|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        T: text('Checking order ORD-7781. '),
        A: delta(0, '', { id: 'call_1', name: 'issue_refund' }),
        D: delta(0, '{"order_id":"ORD-7781",'),
        E: delta(0, '"amount":"full"}'),
        U: usage(142, 31),
        F: finish('tool-calls', 'completed'),
      },
      subscriptions: '^------------!',
    },
    {
      title:
        'reasoning summary parts, then a call sent whole: the finish carries the response id and the output items',
      source: /*   */ '-c-r-s-i-a-f---|',
      // biome-ignore format: an aligned value table
      values: {
        c: { type: 'response.created', response: { id: 'resp_1', status: 'in_progress' } },
        r: summary(0, '**Checking the order**'),
        s: summary(1, '**Refund policy**'),
        i: { type: 'response.output_item.done', output_index: 0, item: reasoningItem } as OpenAIResponsesEvent,
        a: { type: 'response.output_item.done', output_index: 1, item: callItem },
        f: { type: 'response.completed', response: { id: 'resp_1', status: 'completed', usage: { input_tokens: 412, input_tokens_details: { cached_tokens: 256 }, output_tokens: 230, output_tokens_details: { reasoning_tokens: 192 } } } },
      },
      label: 'openaiResponses()',
      operator: () => openaiResponses(),
      expected: /* */ '---R-S---A-(UF)|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        R: reasoning('**Checking the order**'),
        S: reasoning('\n\n**Refund policy**'),
        A: delta(0, '{"order_id":"ORD-7781","amount":"full"}', { id: 'call_1', name: 'issue_refund' }),
        U: { ...usage(412, 230), cachedInputTokens: 256, reasoningTokens: 192 },
        F: { ...finish('tool-calls', 'completed'), responseId: 'resp_1', output: { format: 'openai-responses', items: [reasoningItem, callItem] } },
      },
      subscriptions: '^--------------!',
    },
    {
      title:
        'a web search the provider ran is no call, a keepalive is read past: finish stop, the search in the output',
      source: /*   */ '-w-k-t-f---|',
      // biome-ignore format: an aligned value table
      values: {
        w: { type: 'response.output_item.done', output_index: 0, item: webSearch } as OpenAIResponsesEvent,
        k: { type: 'keepalive', sequence_number: 7 },
        t: { type: 'response.output_item.done', output_index: 1, item: message } as OpenAIResponsesEvent,
        f: { type: 'response.completed', response: { id: 'resp_2', status: 'completed' } },
      },
      label: 'openaiResponses()',
      operator: () => openaiResponses(),
      expected: /* */ '-------F---|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        F: { ...finish('stop', 'completed'), responseId: 'resp_2', output: { format: 'openai-responses', items: [webSearch, message] } },
      },
    },
    {
      title:
        'an error event (documented flat shape) errors with a retryable ProviderError; response.failed is not read',
      source: /*   */ '-t-e-f-|',
      values: {
        t: textDelta('Refunding the dam'),
        e: flatError,
        f: failed,
      },
      label: 'openaiResponses()',
      operator: () => openaiResponses(),
      expected: /* */ '-T-#',
      expectedValues: { T: text('Refunding the dam') },
      expectedError: upstreamProviderError('openai-responses', 'The server had an error.', {
        retryable: true,
        upstreamCode: 'server_error',
        payload: flatError,
      }),
      subscriptions: '^--!',
    },
    {
      title: 'the nested error shape of a recorded stream: insufficient_quota is not retryable',
      source: /*   */ '-e-|',
      values: { e: nestedError },
      label: 'openaiResponses()',
      operator: () => openaiResponses(),
      expected: /* */ '-#',
      expectedError: upstreamProviderError('openai-responses', 'You exceeded your current quota.', {
        retryable: false,
        upstreamCode: 'insufficient_quota',
        payload: nestedError,
      }),
    },
  ],
});
