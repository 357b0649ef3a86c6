import { anthropicMessages } from 'cleanturn/providers';
import { defineMarbles, delta, finish, reasoning, text, usage } from 'cleanturn/testing';
import type { AnthropicStreamEvent } from '../src/providers/anthropicMessages.js';
import { upstreamProviderError } from '../src/providers/errors.js';

// biome-ignore format: an aligned value table
const v = {
  s: { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 412, output_tokens: 2 } } },
  g: { type: 'ping' },
  b: { type: 'content_block_start', index: 0, content_block: { type: 'text' } },
  a: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking order ORD-7781. ' } },
  c: { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'issue_refund', input: {} } },
  j: { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"order_id":"ORD-7781",' } },
  k: { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"amount":"full"}' } },
  d: { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 58 } },
  p: { type: 'message_stop' },
  e: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
  x: { type: 'message_start', message: { id: 'msg_2' } },
  h: { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
  t: { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The book arrived damaged: a full refund.' } },
  n: { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCkgIAx' } },
  w: { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"order_id":"ORD-7781","amount":"full"}' } },
} satisfies Record<string, AnthropicStreamEvent>;

/** The finish of a message: its id, and its content blocks as the next request sends them back. */
const finished = (content: object[]) => ({
  ...finish('tool-calls', 'tool_use'),
  responseId: 'msg_1',
  output: { format: 'anthropic-messages', content },
});
const refund = {
  type: 'tool_use',
  id: 'toolu_1',
  name: 'issue_refund',
  input: { order_id: 'ORD-7781', amount: 'full' },
};

export default defineMarbles({
  name: 'anthropicMessages',
  summary:
    'Turns Anthropic Messages events into neutral events: text, reasoning, call fragments keyed by block index, usage, the finish with the message to send back.',
  cases: [
    {
      title: 'text, a tool_use block whose arguments stream in fragments, and the finish',
      source: /*   */ '-s-b-a-c-j-k-d-p-|',
      values: v,
      label: 'anthropicMessages()',
      operator: () => anthropicMessages(),
      expected: /* */ '-U---A-C-J-K-W-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        U: usage(412, 2),
        A: text('Checking order ORD-7781. '),
        C: delta(1, '', { id: 'toolu_1', name: 'issue_refund' }),
        J: delta(1, '{"order_id":"ORD-7781",'),
        K: delta(1, '"amount":"full"}'),
        W: usage(412, 58),
        F: finished([{ type: 'text', text: 'Checking order ORD-7781. ' }, refund]),
      },
      subscriptions: '^----------------!',
    },
    {
      title:
        'thinking is reasoning, never text; its signature stays on the block, before the call in the output',
      source: /*   */ '-s-h-t-n-c-w-d-p-|',
      values: v,
      label: 'anthropicMessages()',
      operator: () => anthropicMessages(),
      expected: /* */ '-U---R---C-J-W-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        U: usage(412, 2),
        R: reasoning('The book arrived damaged: a full refund.'),
        C: delta(1, '', { id: 'toolu_1', name: 'issue_refund' }),
        J: delta(1, '{"order_id":"ORD-7781","amount":"full"}'),
        W: usage(412, 58),
        F: finished([{ type: 'thinking', thinking: 'The book arrived damaged: a full refund.', signature: 'EqQBCkgIAx' }, refund]),
      },
    },
    {
      title: 'an overloaded_error after some text: a retryable ProviderError',
      source: /*   */ '-s-b-a-e-a-|',
      values: v,
      label: 'anthropicMessages()',
      operator: () => anthropicMessages(),
      expected: /* */ '-U---A-#',
      expectedValues: { U: usage(412, 2), A: text('Checking order ORD-7781. ') },
      expectedError: upstreamProviderError('anthropic-messages', 'Overloaded', {
        retryable: true,
        upstreamCode: 'overloaded_error',
        payload: v.e,
      }),
      subscriptions: '^------!',
    },
    {
      title: 'a ping and a repeated message_start are ignored; a message_start with another id is a splice',
      source: /*   */ '-s-g-s-b-a-x-a-|',
      values: v,
      label: 'anthropicMessages()',
      operator: () => anthropicMessages(),
      expected: /* */ '-U-------A-#',
      expectedValues: { U: usage(412, 2), A: text('Checking order ORD-7781. ') },
      expectedError: upstreamProviderError(
        'anthropic-messages',
        'two generations spliced into one stream: message msg_2 started inside message msg_1',
        { retryable: true, upstreamCode: 'spliced_stream', payload: v.x },
      ),
    },
  ],
});
