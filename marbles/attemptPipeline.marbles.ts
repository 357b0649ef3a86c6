import { attemptPipeline } from 'cleanturn';
import { call, defineMarbles, delta, finish, text } from 'cleanturn/testing';
import { missingFinishError } from '../src/errors.js';

const v = {
  a: text('Checking order ORD-7781. '),
  x: delta(0, '{"order_id":"ORD-7781",', { id: 'c1', name: 'issue_refund' }),
  y: delta(0, '"amount":"full"}'),
  f: finish('tool-calls'),
};
const whole = call('c1', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' });

export default defineMarbles({
  name: 'attemptPipeline',
  summary: 'One attempt, made whole: the adapter, call fragments joined, and a finish required.',
  cases: [
    {
      title:
        'fragments come out as one whole call when its arguments close; the finish ends the attempt at once',
      source: /*   */ '-a-x-y-f-|',
      values: v,
      label: 'attemptPipeline()',
      operator: () => attemptPipeline(),
      expected: /* */ '-a---K-(f|)',
      expectedValues: { ...v, K: whole },
      subscriptions: '^------!',
    },
    {
      title: 'the attempt ends at its finish: what the connection does afterwards (a reset) cannot fail it',
      source: /*   */ '-a-f--#',
      values: v,
      label: 'attemptPipeline()',
      operator: () => attemptPipeline(),
      expected: /* */ '-a-(f|)',
      expectedValues: v,
      subscriptions: '^--!',
    },
    {
      title: 'an attempt cut off before its finish fails with a retryable missing-finish TurnError',
      source: /*   */ '-a-x-y-|',
      values: v,
      label: 'attemptPipeline()',
      operator: () => attemptPipeline(),
      expected: /* */ '-a---K-#',
      expectedValues: { ...v, K: whole },
      expectedError: missingFinishError(),
    },
  ],
});
