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
      expected: /* */ '-a-c-d---b-k-e-f-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        a: at(1, h.a),
        c: at(1, h.c),
        d: at(1, h.d),
        b: at(1, h.b),
        k: at(1, h.k),
        e: at(1, h.e),
        f: at(1, h.f),
      },
      subscriptions: '^----------------!',
    },
  ],
});
