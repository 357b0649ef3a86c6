import { naivePolicy } from 'cleanturn';
import { at, defineMarbles, finish, helpDesk as h, reasoning, text } from 'cleanturn/testing';
import { thinking } from './alphabet.js';

export default defineMarbles({
  name: 'naivePolicy',
  summary:
    'Keep appending, run each call at once: the user reads both attempts glued together and the refund runs twice (c1 and c7).',
  cases: [
    {
      title: 'the help-desk turn: the retry is spliced in silently; both refunds reach the tools',
      source: /*   */ '-a-c-d-r-b-k-e-f-|',
      values: h,
      label: 'naivePolicy()',
      operator: () => naivePolicy(),
      expected: /* */ '-A-C-D---B-K-E-F-|',
      // Every event comes out as attempt 1, attempt 2's too (B, K, E, F): the policy never sees the retry.
      // biome-ignore format: an aligned value table
      expectedValues: {
        A: at(1, h.a),
        C: at(1, h.c),
        D: at(1, h.d),
        B: at(1, h.b),
        K: at(1, h.k),
        E: at(1, h.e),
        F: at(1, h.f),
      },
      subscriptions: '^----------------!',
    },
    {
      title: "reasoning is glued too: attempt 1's thinking and attempt 2's read as one, all of attempt 1",
      source: /*   */ '-p-a-r-q-b-f-|',
      values: thinking,
      label: 'naivePolicy()',
      operator: () => naivePolicy(),
      expected: /* */ '-P-A---Q-B-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        P: at(1, reasoning('The customer wants a refund.')),
        A: at(1, text('Refunding the dam')),
        Q: at(1, reasoning('Check the order first.')),
        B: at(1, text('Refund started.')),
        F: at(1, finish('stop')),
      },
    },
  ],
});
