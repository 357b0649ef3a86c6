import { type Attempted, bufferUntilFinish, type ProviderEvent } from 'cleanturn';
import { at, call, defineMarbles, finish, text } from 'cleanturn/testing';
import { tagged as t } from './alphabet.js';

const lookup = call('c2', 'lookup_order', { order_id: 'ORD-7781' });
const refund = call('c3', 'issue_refund', { order_id: 'ORD-7781', amount: 'full' });

export default defineMarbles({
  name: 'bufferUntilFinish',
  summary: 'Holds tool calls until their attempt finishes; a reset discards them unreleased.',
  cases: [
    {
      title: "attempt 1's refund is discarded by the reset; attempt 2's is released right before its finish",
      source: /*   */ '-A-C-D-X-B-K-E-F----|',
      values: t,
      label: 'bufferUntilFinish()',
      operator: () => bufferUntilFinish(),
      expected: /* */ '-A---D-X-B---E-(KF)-|',
      expectedValues: t,
      subscriptions: '^-------------------!',
    },
    {
      title: 'a pure read marked early passes at once; the refund still waits',
      source: /*   */ '-l-c-t-f---|',
      // biome-ignore format: an aligned value table
      values: { l: at(1, lookup), c: at(1, refund), t: at(1, text('Done.')), f: at(1, finish('tool-calls')) },
      label: "bufferUntilFinish({ early: (call) => call.name === 'lookup_order' })",
      operator: () =>
        bufferUntilFinish<Attempted<ProviderEvent>>({ early: (c) => c.name === 'lookup_order' }),
      expected: /* */ '-l---t-(cf)|',
      // biome-ignore format: an aligned value table
      expectedValues: {
        l: at(1, lookup),
        c: at(1, refund),
        t: at(1, text('Done.')),
        f: at(1, finish('tool-calls')),
      },
    },
    {
      title: 'a stream that completes without a finish releases nothing',
      source: /*   */ '-c-t-|',
      values: { c: at(1, refund), t: at(1, text('Refunding the dam')) },
      label: 'bufferUntilFinish()',
      operator: () => bufferUntilFinish(),
      expected: /* */ '---t-|',
      expectedValues: { t: at(1, text('Refunding the dam')) },
    },
    {
      title: 'an error discards the held calls',
      source: /*   */ '-c-t-#',
      values: { c: at(1, refund), t: at(1, text('Refunding the dam')) },
      error: new Error('socket hang up'),
      label: 'bufferUntilFinish()',
      operator: () => bufferUntilFinish(),
      expected: /* */ '---t-#',
      expectedValues: { t: at(1, text('Refunding the dam')) },
      expectedError: new Error('socket hang up'),
    },
  ],
});
