import { geminiContent } from 'cleanturn/providers';
import { call, defineMarbles, finish, helpDesk, reasoning, text, usage } from 'cleanturn/testing';
import { upstreamProviderError } from '../src/providers/errors.js';
import type { GeminiChunk } from '../src/providers/geminiContent.js';

/** A finish with the attempt's output: its parts as the next request sends them back. */
const done = (
  reason: 'stop' | 'tool-calls' | 'content-filter',
  raw: string,
  parts: object[],
  responseId?: string,
) => ({
  ...finish(reason, raw),
  ...(responseId === undefined ? {} : { responseId }),
  output: { format: 'gemini', parts },
});
const thought = 'The book is damaged: refund.';
const signature = 'CiQB0e2Kb3Nl';

// biome-ignore format: an aligned value table
const v = {
  a: { candidates: [{ content: { parts: [{ text: 'Checking order ORD-7781. ' }] } }] },
  h: { candidates: [{ content: { parts: [{ text: thought, thought: true }] } }] },
  b: { candidates: [{ content: { parts: [{ functionCall: { name: 'issue_refund', args: helpDesk.refundArgs } }] } }] },
  k: { candidates: [{ content: { parts: [{ functionCall: { name: 'issue_refund', args: helpDesk.refundArgs }, thoughtSignature: signature }] } }] },
  c: { candidates: [{ content: { parts: [] }, finishReason: 'STOP' }] },
  u: { candidates: [{ content: { parts: [] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 88, cachedContentTokenCount: 32, candidatesTokenCount: 25, thoughtsTokenCount: 41 }, responseId: 'Ugx3acX2KqWZ28oP' },
  s: { candidates: [{ content: { parts: [{ text: 'Checking order ' }] }, finishReason: 'STOP' }] },
  t: { candidates: [{ content: { parts: [{ text: 'ORD-7781.' }] }, finishReason: 'STOP' }] },
  r: { candidates: [{ content: { parts: [] }, finishReason: 'RECITATION' }] },
  e: { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } },
} satisfies Record<string, GeminiChunk>;

export default defineMarbles({
  name: 'geminiContent',
  summary:
    'Turns Gemini chunks into neutral events: text, reasoning, whole calls with generated ids, usage, the finish with the output to send back.',
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
        K: call('gemini-call-0', 'issue_refund', helpDesk.refundArgs),
        F: done('tool-calls', 'STOP', [{ text: 'Checking order ORD-7781. ' }, { functionCall: { name: 'issue_refund', args: helpDesk.refundArgs } }]),
      },
      subscriptions: '^------!',
    },
    {
      title:
        'a thought part is reasoning, never text; the finish carries the output to send back, the signature on the functionCall that carried it; thoughts count as output',
      source: /*   */ '-h-a-k-u-|',
      values: v,
      label: 'geminiContent()',
      operator: () => geminiContent(),
      expected: /* */ '-R-A-K-U-(F|)',
      // biome-ignore format: an aligned value table
      expectedValues: {
        R: reasoning(thought),
        A: text('Checking order ORD-7781. '),
        K: call('gemini-call-0', 'issue_refund', helpDesk.refundArgs),
        U: { ...usage(88, 66), cachedInputTokens: 32, reasoningTokens: 41 },
        F: done('tool-calls', 'STOP', [
          { text: thought, thought: true },
          { text: 'Checking order ORD-7781. ' },
          { functionCall: { name: 'issue_refund', args: helpDesk.refundArgs }, thoughtSignature: signature },
        ], 'Ugx3acX2KqWZ28oP'),
      },
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
        F: done('content-filter', 'RECITATION', [{ text: 'Checking order ORD-7781.' }]),
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
      expectedError: upstreamProviderError('gemini', 'The model is overloaded.', {
        retryable: true,
        upstreamCode: 'UNAVAILABLE',
        status: 503,
        payload: v.e,
      }),
      subscriptions: '^--!',
    },
  ],
});
