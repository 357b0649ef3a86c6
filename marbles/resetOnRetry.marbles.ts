import { resetOnRetry } from 'cleanturn';
import { at, defineMarbles, finish, reset, text } from 'cleanturn/testing';
import { tagged as t } from './alphabet.js';

export default defineMarbles({
  name: 'resetOnRetry',
  summary: 'Turns each `retry` into a typed `reset` and drops stragglers of older attempts.',
  cases: [
    {
      title: 'the retry of the help-desk turn becomes a reset that starts attempt 2',
      source: /*   */ '-A-C-D-R-B-K-E-F-|',
      values: t,
      label: 'resetOnRetry()',
      operator: () => resetOnRetry(),
      expected: /* */ '-A-C-D-X-B-K-E-F-|',
      expectedValues: t,
      subscriptions: '^----------------!',
    },
    {
      title: 'a late event of an abandoned attempt is dropped',
      source: /*   */ '-a-r-b-l-f-|',
      // biome-ignore format: an aligned value table
      values: {
        a: at(1, text('Refunding the dam')),
        r: at(2, { type: 'retry', reason: 'stall' }),
        b: at(2, text('Refund started.')),
        l: at(1, text('age')),
        f: at(2, finish()),
      },
      label: 'resetOnRetry()',
      operator: () => resetOnRetry(),
      expected: /* */ '-a-X-b---f-|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        a: at(1, text('Refunding the dam')),
        X: reset(2, 'stall'),
        b: at(2, text('Refund started.')),
        f: at(2, finish()),
      },
    },
  ],
});
