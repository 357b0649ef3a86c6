import { aiSdkParts, ProviderError } from 'cleanturn/providers';
import { call, defineMarbles, finish, refundArgs, text, usage } from 'cleanturn/testing';

// Plain objects: streamText parts carry more fields than the adapter's input types list.
const id = 'call_1';
// biome-ignore format: an aligned value table
const v = {
  t: { type: 'text-delta', id: '0', text: 'Checking order ORD-7781. ' },
  i: { type: 'tool-input-start', id, toolName: 'issue_refund' },
  d: { type: 'tool-input-delta', id, delta: '{"order_id":"ORD-7781","amount":"full"}' },
  c: { type: 'tool-call', toolCallId: id, toolName: 'issue_refund', input: refundArgs },
  s: { type: 'finish-step', usage: { inputTokens: 142, outputTokens: 31 } },
  f: { type: 'finish', finishReason: 'tool-calls', rawFinishReason: 'tool_calls' },
  e: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
  a: { type: 'abort', reason: 'This operation was aborted' },
};

export default defineMarbles({
  name: 'aiSdkParts',
  summary:
    'Turns AI SDK stream parts into neutral events: text, whole calls at the end of their step, usage, the finish.',
  cases: [
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
        K: call(id, 'issue_refund', refundArgs),
        U: usage(142, 31),
        F: finish('tool-calls', 'tool_calls'),
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
      expectedError: new ProviderError('ai-sdk', 'Overloaded', {
        retryable: true,
        code: 'overloaded_error',
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
      expectedError: new ProviderError('ai-sdk', 'This operation was aborted', {
        retryable: false,
        code: 'aborted',
        payload: v.a,
      }),
    },
  ],
});
