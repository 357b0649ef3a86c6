import { requireFinish } from 'cleanturn';
import { at, defineMarbles, finish, reset, text } from 'cleanturn/testing';
import { missingFinishError } from '../src/errors.js';

export default defineMarbles({
  name: 'requireFinish',
  summary: 'Errors with a retryable `missing-finish TurnError` when the stream ends without a finish.',
  cases: [
    {
      title: 'a finished stream passes through untouched',
      source: /*   */ '-a-f-|',
      values: { a: text('Refund started.'), f: finish() },
      label: 'requireFinish()',
      operator: () => requireFinish(),
      expected: /* */ '-a-f-|',
      expectedValues: { a: text('Refund started.'), f: finish() },
      subscriptions: '^----!',
    },
    {
      title: 'a socket closed cleanly before the finish becomes a retryable error',
      source: /*   */ '-a-b-|',
      values: { a: text('Refunding '), b: text('the dam') },
      label: 'requireFinish()',
      operator: () => requireFinish(),
      expected: /* */ '-a-b-#',
      expectedValues: { a: text('Refunding '), b: text('the dam') },
      expectedError: missingFinishError(),
    },
    {
      title: 'on a tagged stream, each attempt after a reset needs its own finish',
      source: /*   */ '-a-f-x-b-|',
      values: { a: at(1, text('Hi.')), f: at(1, finish()), x: reset(2, 'late error'), b: at(2, text('Hel')) },
      label: 'requireFinish()',
      operator: () => requireFinish(),
      expected: /* */ '-a-f-x-b-#',
      expectedValues: {
        a: at(1, text('Hi.')),
        f: at(1, finish()),
        x: reset(2, 'late error'),
        b: at(2, text('Hel')),
      },
      expectedError: missingFinishError(2),
    },
  ],
});
