import { lateExecutionPolicy } from 'cleanturn';
import { defineMarbles, helpDesk as h } from 'cleanturn/testing';
import { tagged as t, thinking, thinkingReset } from './alphabet.js';

export default defineMarbles({
  name: 'lateExecutionPolicy',
  summary:
    'Reset on retry and run calls only after their attempt finishes: clean text and one refund, c7 — the call of the attempt that finished.',
  cases: [
    {
      title: 'the help-desk turn: c1 dies with attempt 1; c7 is released with the finish',
      source: /*   */ '-a-c-d-r-b-k-e-f----|',
      values: h,
      label: 'lateExecutionPolicy()',
      operator: () => lateExecutionPolicy(),
      expected: /* */ '-A---D-X-B---E-(KF)-|',
      expectedValues: t,
      subscriptions: '^-------------------!',
    },
    {
      title: "reasoning belongs to its attempt: the reset voids attempt 1's thinking with its text",
      source: /*   */ '-p-a-r-q-b-f-|',
      values: thinking,
      label: 'lateExecutionPolicy()',
      operator: () => lateExecutionPolicy(),
      expected: /* */ '-P-A-X-Q-B-F-|',
      expectedValues: thinkingReset,
    },
  ],
});
