import { aiSdkParts } from 'cleanturn/providers';
import { call, defineMarbles, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import type { AiSdkOutput } from '../src/providers/aiSdkParts.js';
import { upstreamProviderError } from '../src/providers/errors.js';
import type { FinishEvent } from '../src/types.js';

// Plain objects: streamText parts carry more fields than the adapter's input types list.
const id = 'call_1';
const signature = { anthropic: { signature: 'EqQBCkYIBxgC' } };
// biome-ignore format: an aligned value table
const v = {
  t: { type: 'text-delta', id: '0', text: 'Checking order ORD-7781. ' },
  i: { type: 'tool-input-start', id, toolName: 'issue_refund' },
  d: { type: 'tool-input-delta', id, delta: '{"order_id":"ORD-7781","amount":"full"}' },
  c: { type: 'tool-call', toolCallId: id, toolName: 'issue_refund', input: helpDesk.refundArgs },
  s: { type: 'finish-step', usage: { inputTokens: 142, outputTokens: 31 } },
  f: { type: 'finish', finishReason: 'tool-calls', rawFinishReason: 'tool_calls' },
  e: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
  a: { type: 'abort', reason: 'This operation was aborted' },
  r: { type: 'reasoning-start', id: 'r0' },
  x: { type: 'reasoning-delta', id: 'r0', text: 'A damaged book: a full refund.' },
  g: { type: 'reasoning-delta', id: 'r0', text: '', providerMetadata: signature },
  n: { type: 'reasoning-end', id: 'r0' },
  h: {
    type: 'finish-step',
    response: { id: 'msg_01K2JbSU', modelId: 'claude-sonnet-4-5' },
    usage: { inputTokens: 2212, inputTokenDetails: { cacheReadTokens: 1800 }, outputTokens: 188 },
  },
  k: { type: 'finish', finishReason: 'tool-calls', rawFinishReason: 'tool_use' },
};

const textPart = { type: 'text', text: 'Checking order ORD-7781. ' } as const;
const callPart = {
  type: 'tool-call',
  toolCallId: id,
  toolName: 'issue_refund',
  input: helpDesk.refundArgs,
} as const;
/** A finish with the attempt's output and, when the stream named it, the response id. */
const ended = (event: FinishEvent, content: AiSdkOutput['content'], responseId?: string): FinishEvent => {
  const output: AiSdkOutput = { format: 'ai-sdk', content };
  return responseId === undefined ? { ...event, output } : { ...event, responseId, output };
};

export default defineMarbles({
  name: 'aiSdkParts',
  summary:
    'Turns AI SDK stream parts into neutral events: text, reasoning, whole calls at the end of their step, usage, the finish with its output.',
  cases: [
    {
      title:
        'reasoning: its text an event of its own; the signature (provider metadata) kept for the output, with the response id',
      source: /*   */ '-r-x-g-n-t-c-h----k-|',
      values: v,
      label: 'aiSdkParts()',
      operator: () => aiSdkParts(),
      expected: /* */ '---R-----T---(KU)-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        R: reasoning('A damaged book: a full refund.'),
        T: text('Checking order ORD-7781. '),
        K: call(id, 'issue_refund', helpDesk.refundArgs),
        U: { ...usage(2212, 188), cachedInputTokens: 1800 },
        F: ended(
          finish('tool-calls', 'tool_use'),
          [{ type: 'reasoning', text: 'A damaged book: a full refund.', providerOptions: signature }, textPart, callPart],
          'msg_01K2JbSU',
        ),
      },
      subscriptions: '^-------------------!',
    },
    {
      title: 'text, tool input previews (not forwarded), the whole call released at the end of its step',
      source: /*   */ '-t-i-d-c-s----f-|',
      values: v,
      label: 'aiSdkParts()',
      operator: () => aiSdkParts(),
      expected: /* */ '-T-------(KU)-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        T: text('Checking order ORD-7781. '),
        K: call(id, 'issue_refund', helpDesk.refundArgs),
        U: usage(142, 31),
        F: ended(finish('tool-calls', 'tool_calls'), [textPart, callPart]),
      },
      subscriptions: '^---------------!',
    },
    {
      title: 'an error part: a retryable ProviderError; the finish the SDK sends after it is never read',
      source: /*   */ '-t-e-f-|',
      values: v,
      label: 'aiSdkParts()',
      operator: () => aiSdkParts(),
      expected: /* */ '-T-#',
      expectedValues: { T: text('Checking order ORD-7781. ') },
      expectedError: upstreamProviderError('ai-sdk', 'Overloaded', {
        retryable: true,
        upstreamCode: 'overloaded_error',
        payload: v.e,
      }),
      subscriptions: '^--!',
    },
    {
      title: 'an abort: the caller stopped the turn, a ProviderError that is not retryable',
      source: /*   */ '-t-a-|',
      values: v,
      label: 'aiSdkParts()',
      operator: () => aiSdkParts(),
      expected: /* */ '-T-#',
      expectedValues: { T: text('Checking order ORD-7781. ') },
      expectedError: upstreamProviderError('ai-sdk', 'This operation was aborted', {
        retryable: false,
        upstreamCode: 'aborted',
        payload: v.a,
      }),
    },
  ],
});
