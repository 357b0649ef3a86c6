import { lateExecutionPolicy } from 'cleanturn';
import { at, defineMarbles, finish, helpDesk as h, reasoning, reset, text } from 'cleanturn/testing';
import { tagged as t } from './alphabet.js';

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
      // biome-ignore format: an aligned value table
      values: {
        p: reasoning('The customer wants a refund.'),
        a: text('Refunding the dam'),
        r: h.r,
        q: reasoning('Check the order first.'),
        b: text('Refund started.'),
        f: finish('stop'),
      },
      label: 'lateExecutionPolicy()',
      operator: () => lateExecutionPolicy(),
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
