import { turnPipeline } from 'cleanturn';
import { at, call, defineMarbles, helpDesk as h, keyed, text } from 'cleanturn/testing';
import { keyedK, tagged as t, turnId } from './alphabet.js';

const cut = new Error('connection reset');
/** The reset of the one retry, with the facts of the retry it comes from. */
const X = {
  ...t.X,
  delay: 0,
  failedAttempt: 1,
  outputStarted: true,
  retryCount: 1,
  maxRetries: 1,
  errorName: 'Error',
};

// Attempt 2 from another provider (streamTurn's plan): Anthropic's own call id, the same refund.
const claude = {
  ...h,
  m: text('The book arrived damaged; I have started a full refund.'),
  n: call('toolu_9', 'issue_refund', h.refundArgs),
};

export default defineMarbles({
  name: 'turnPipeline',
  summary: 'One turn: failed attempts retried as events, and the clean turn made of them.',
  cases: [
    {
      title:
        'attempt 1 fails after its refund; the reset comes before attempt 2, whose refund is released at its finish',
      source: ['-a-c-d-#', '-b-k-e-f----|'],
      values: h,
      error: cut,
      label: "turnPipeline({ turnId: 'turn-42', retry: 1 })",
      operator: () => turnPipeline({ turnId, retry: 1 }),
      expected: /* */ '-A---D-XB---E-(KF)-|',
      expectedValues: { ...t, X, K: keyedK, F: at(2, h.f) },
      subscriptions: ['^------!', '-------^-----------!'],
    },
    {
      title:
        'another provider on retry (streamTurn with a plan): the reset makes the switch safe, and the refund keeps its effect key under the new call id',
      source: ['-a-c-d-#', '-m-n-f----|'],
      values: claude,
      error: cut,
      label: "turnPipeline({ turnId: 'turn-42', retry: 1 }): attempt 1 to OpenAI, attempt 2 to Anthropic",
      operator: () => turnPipeline({ turnId, retry: 1 }),
      expected: /* */ '-A---D-XM---(NF)-|',
      expectedValues: {
        ...t,
        X,
        M: at(2, claude.m),
        N: keyed(turnId, 2, claude.n),
        F: at(2, h.f),
      },
      subscriptions: ['^------!', '-------^---------!'],
    },
  ],
});
