import { type OpenAIResponsesEvent, openaiResponses, ProviderError } from 'cleanturn/providers';
import { defineMarbles, delta, finish, text, usage } from 'cleanturn/testing';

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
      expectedError: new ProviderError('openai-responses', 'The server had an error.', {
        retryable: true,
        code: 'server_error',
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
      expectedError: new ProviderError('openai-responses', 'You exceeded your current quota.', {
        retryable: false,
        code: 'insufficient_quota',
        payload: nestedError,
      }),
    },
  ],
});
