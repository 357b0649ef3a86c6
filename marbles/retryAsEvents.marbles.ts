import { backoff, retryAsEvents } from 'cleanturn';
import { defineMarbles, finish, retrying, text } from 'cleanturn/testing';
import { timer } from 'rxjs';
import { retriesExhaustedError } from '../src/errors.js';

const reset = new Error('connection reset');
const stall = new Error('stalled');
const v = { a: text('Refunding the dam'), b: text('Refund'), c: text('Refund started.'), f: finish() };
/** The facts of retry `retryCount` of a source that emitted before it failed. */
const facts = (retryCount: number, maxRetries: number, delay?: number) => ({
  ...(delay === undefined ? {} : { delay }),
  failedAttempt: retryCount,
  outputStarted: true,
  retryCount,
  maxRetries,
  errorName: 'Error',
});

export default defineMarbles({
  name: 'retryAsEvents',
  summary:
    'Retries like RxJS `retry`, but emits a `retry` event before each new attempt; past the cap, a typed error.',
  cases: [
    {
      title: 'the source fails once: a retry event, then the second attempt',
      source: ['-a-#', '--c-f-|'],
      values: v,
      error: reset,
      label: 'retryAsEvents({ count: 2 })',
      operator: () => retryAsEvents({ count: 2 }),
      expected: /* */ '-a-r-c-f-|',
      expectedValues: { ...v, r: retrying('connection reset', reset, facts(1, 2, 0)) },
      subscriptions: ['^--!', '---^-----!'],
    },
    {
      title:
        'with a delay, the retry event comes when the attempt fails, before the wait, and says how long it is',
      source: ['-a-#', '--b-#', '--c-f-|'],
      values: v,
      error: stall,
      label: "retryAsEvents({ count: 2, delay: backoff({ initialDelay: 3, factor: 1, jitter: 'none' }) })",
      operator: () =>
        retryAsEvents({ count: 2, delay: backoff({ initialDelay: 3, factor: 1, jitter: 'none' }) }),
      expected: /* */ '-a-r----b-s----c-f-|',
      expectedValues: {
        ...v,
        r: retrying('stalled', stall, facts(1, 2, 3)),
        s: retrying('stalled', stall, facts(2, 2, 3)),
      },
      subscriptions: ['^--!', '------^---!', '-------------^-----!'],
    },
    {
      title:
        'a delay function may answer in milliseconds (a Retry-After): the event says so, the wait follows',
      source: ['-a-#', '--c-f-|'],
      values: v,
      error: reset,
      label: 'retryAsEvents({ count: 2, delay: () => 5 })',
      operator: () => retryAsEvents({ count: 2, delay: () => 5 }),
      expected: /* */ '-a-r------c-f-|',
      expectedValues: { ...v, r: retrying('connection reset', reset, facts(1, 2, 5)) },
      subscriptions: ['^--!', '--------^-----!'],
    },
    {
      title: 'a notifier that does not say how long it waits: the event comes at once, without a delay',
      source: ['-a-#', '--c-f-|'],
      values: v,
      error: reset,
      label: 'retryAsEvents({ count: 2, delay: () => timer(4) })',
      operator: () => retryAsEvents({ count: 2, delay: () => timer(4) }),
      expected: /* */ '-a-r-----c-f-|',
      expectedValues: { ...v, r: retrying('connection reset', reset, facts(1, 2)) },
      subscriptions: ['^--!', '-------^-----!'],
    },
    {
      title: 'past the cap: retries-exhausted TurnError with a record of every attempt',
      source: ['-a-#', '--b-#'],
      values: v,
      error: reset,
      label: 'retryAsEvents({ count: 1 })',
      operator: () => retryAsEvents({ count: 1 }),
      expected: /* */ '-a-r-b-#',
      expectedValues: { ...v, r: retrying('connection reset', reset, facts(1, 1, 0)) },
      expectedError: retriesExhaustedError('cap', [
        { attempt: 1, reason: 'connection reset', error: reset, emitted: 1 },
        { attempt: 2, reason: 'connection reset', error: reset, emitted: 1 },
      ]),
    },
    {
      title: 'an error that is not retryable passes through as it is',
      source: ['-a-#'],
      values: v,
      error: Object.assign(new Error('invalid api key'), { retryable: false }),
      label: 'retryAsEvents({ count: 3 })',
      operator: () => retryAsEvents({ count: 3 }),
      expected: /* */ '-a-#',
      expectedValues: v,
      expectedError: Object.assign(new Error('invalid api key'), { retryable: false }),
    },
  ],
});
