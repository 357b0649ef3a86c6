import { type GeminiChunk, geminiContent, ProviderError } from 'cleanturn/providers';
import { call, defineMarbles, finish, refundArgs, text, usage } from 'cleanturn/testing';

// biome-ignore format: an aligned value table
const v = {
  a: { candidates: [{ content: { parts: [{ text: 'Checking order ORD-7781. ' }] } }] },
  h: { candidates: [{ content: { parts: [{ text: 'The book is damaged: refund.', thought: true }] } }], usageMetadata: { promptTokenCount: 88, thoughtsTokenCount: 41 } },
  b: { candidates: [{ content: { parts: [{ functionCall: { name: 'issue_refund', args: refundArgs } }] } }] },
  c: { candidates: [{ content: { parts: [] }, finishReason: 'STOP' }] },
  s: { candidates: [{ content: { parts: [{ text: 'Checking order ' }] }, finishReason: 'STOP' }] },
  t: { candidates: [{ content: { parts: [{ text: 'ORD-7781.' }] }, finishReason: 'STOP' }] },
  r: { candidates: [{ content: { parts: [] }, finishReason: 'RECITATION' }] },
  e: { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } },
} satisfies Record<string, GeminiChunk>;

export default defineMarbles({
  name: 'geminiContent',
  summary:
    'Turns Gemini chunks into neutral events: text (not thoughts), whole calls with generated ids, usage, the finish.',
  cases: [
    {
      title:
        'text, a whole functionCall without an id, and STOP, which means tool-calls after a call; the finish goes out when the stream ends',
      source: /*   */ '-a-b-c-|',
      values: v,
      label: 'geminiContent()',
      operator: () => geminiContent(),
      expected: /* */ '-A-K---(F|)',
      // biome-ignore format: an aligned value table
      expectedValues: {
        A: text('Checking order ORD-7781. '),
        K: call('gemini-call-0', 'issue_refund', refundArgs),
        F: finish('tool-calls', 'STOP'),
      },
      subscriptions: '^------!',
    },
    {
      title: 'a thought part is not answer text; its tokens count as output',
      source: /*   */ '-h-a-c-|',
      values: v,
      label: 'geminiContent()',
      operator: () => geminiContent(),
      expected: /* */ '-U-A---(F|)',
      expectedValues: { U: usage(88, 41), A: text('Checking order ORD-7781. '), F: finish('stop', 'STOP') },
    },
    {
      title:
        'a legacy stream with STOP on every chunk is read to its end, and the last reason wins (RECITATION)',
      source: /*   */ '-s-t-r-|',
      values: v,
      label: 'geminiContent()',
      operator: () => geminiContent(),
      expected: /* */ '-A-B---(F|)',
      // biome-ignore format: an aligned value table
      expectedValues: {
        A: text('Checking order '),
        B: text('ORD-7781.'),
        F: finish('content-filter', 'RECITATION'),
      },
    },
    {
      title: 'a raw JSON error tail (503 UNAVAILABLE): a retryable ProviderError',
      source: /*   */ '-a-e-|',
      values: v,
      label: 'geminiContent()',
      operator: () => geminiContent(),
      expected: /* */ '-A-#',
      expectedValues: { A: text('Checking order ORD-7781. ') },
      expectedError: new ProviderError('gemini', 'The model is overloaded.', {
        retryable: true,
        code: 'UNAVAILABLE',
        status: 503,
        payload: v.e,
      }),
      subscriptions: '^--!',
    },
  ],
});
