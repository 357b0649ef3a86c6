import { turnPipeline } from 'cleanturn';
import { at, defineMarbles, helpDesk as h } from 'cleanturn/testing';
import { keyedK, tagged as t, turnId } from './alphabet.js';

const cut = new Error('connection reset');

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
      expectedValues: { ...t, K: keyedK, F: at(2, h.f) },
      subscriptions: ['^------!', '-------^-----------!'],
    },
  ],
});
