import { tagAttempts } from 'cleanturn';
import { at, defineMarbles, finish, helpDesk as h, retrying, text } from 'cleanturn/testing';

export default defineMarbles({
  name: 'tagAttempts',
  summary: 'Numbers the attempts from `retry` events and stamps `attempt` on every event.',
  cases: [
    {
      title: 'the help-desk turn: attempt 1 until the retry, attempt 2 from it',
      source: /*   */ '-a-c-d-r-b-k-e-f-|',
      values: h,
      label: 'tagAttempts()',
      operator: () => tagAttempts(),
      expected: /* */ '-A-C-D-R-B-K-E-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        A: at(1, h.a),
        C: at(1, h.c),
        D: at(1, h.d),
        R: at(2, h.r),
        B: at(2, h.b),
        K: at(2, h.k),
        E: at(2, h.e),
        F: at(2, h.f),
      },
      subscriptions: '^----------------!',
    },
    {
      title: 'every retry starts the next attempt, even with nothing between',
      source: /*   */ '-a-r-r-b-f-|',
      values: { a: text('x'), r: retrying('reset'), b: text('y'), f: finish() },
      label: 'tagAttempts()',
      operator: () => tagAttempts(),
      expected: /* */ '-A-R-S-B-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        A: at(1, text('x')),
        R: at(2, retrying('reset')),
        S: at(3, retrying('reset')),
        B: at(3, text('y')),
        F: at(3, finish()),
      },
    },
  ],
});
