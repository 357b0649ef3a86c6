import { resetOnlyPolicy } from 'cleanturn';
import { at, defineMarbles, finish, helpDesk as h, reasoning, reset, text } from 'cleanturn/testing';
import { tagged as t } from './alphabet.js';

export default defineMarbles({
  name: 'resetOnlyPolicy',
  summary:
    'Reset what the user reads on retry, run calls at once: clean text, and still two refunds — c1 ran before the reset.',
  cases: [
    {
      title: 'the help-desk turn: a reset clears the text, but c1 already reached the tools',
      source: /*   */ '-a-c-d-r-b-k-e-f-|',
      values: h,
      label: 'resetOnlyPolicy()',
      operator: () => resetOnlyPolicy(),
      expected: /* */ '-A-C-D-X-B-K-E-F-|',
      expectedValues: t,
      subscriptions: '^----------------!',
    },
    {
      title: "reasoning belongs to its attempt: the reset voids attempt 1's thinking with its text",
      source: /*   */ '-p-a-r-q-b-f-|',
      // biome-ignore format: an aligned value table
      values: {
        p: reasoning('The customer wants a refund.'),
        a: text('Refunding the dam'),
        r: h.r,
        q: reasoning('Check the order first.'),
        b: text('Refund started.'),
        f: finish('stop'),
      },
      label: 'resetOnlyPolicy()',
      operator: () => resetOnlyPolicy(),
      expected: /* */ '-P-A-X-Q-B-F-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        P: at(1, reasoning('The customer wants a refund.')),
        A: at(1, text('Refunding the dam')),
        X: reset(2, 'connection reset'),
        Q: at(2, reasoning('Check the order first.')),
        B: at(2, text('Refund started.')),
        F: at(2, finish('stop')),
      },
    },
  ],
});
