import { resetOnlyPolicy } from 'cleanturn';
import { defineMarbles, helpDesk as h } from 'cleanturn/testing';
import { tagged as t, thinking, thinkingReset } from './alphabet.js';

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
      values: thinking,
      label: 'resetOnlyPolicy()',
      operator: () => resetOnlyPolicy(),
      expected: /* */ '-P-A-X-Q-B-F-|',
      expectedValues: thinkingReset,
    },
  ],
});
