import { naivePolicy } from 'cleanturn';
import { at, defineMarbles, helpDesk as h } from 'cleanturn/testing';

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
  ],
});
