import { retryAsEvents, retryBudget } from 'cleanturn';
import { defineMarbles, finish, retrying, text } from 'cleanturn/testing';
import { asyncScheduler } from 'rxjs';
import { retriesExhaustedError } from '../src/errors.js';

const reset = new Error('connection reset');
const v = { a: text('Refunding the dam'), b: text('Refund'), c: text('Refund started.'), f: finish() };
/** Retry `retryCount` of 3 after an attempt that emitted, `delay` ms before the next attempt. */
const r = (retryCount: number, delay: number) =>
  retrying('connection reset', reset, {
    delay,
    failedAttempt: retryCount,
    outputStarted: true,
    retryCount,
    maxRetries: 3,
    errorName: 'Error',
  });

// One retry per 10-frame window, whatever the first attempts: a floor of 100 retries per second over 10 ms, and no
// share of first attempts. The budget's default clock is performance.now(); made inside the run, it is given the
// run's virtual clock (`asyncScheduler.now()` is TestScheduler's time inside `run`), so that it slides with the frames.
const onePerWindow = 'retryBudget({ ttlMs: 10, percentCanRetry: 0, minRetriesPerSec: 100 })';
const budget = () =>
  retryBudget({ ttlMs: 10, percentCanRetry: 0, minRetriesPerSec: 100, now: () => asyncScheduler.now() });

export default defineMarbles({
  name: 'retryBudget',
  summary:
    'A retry budget shared by many turns (`retryAsEvents({ budget })`): retries may be at most a share of first' +
    ' attempts over a sliding window, plus a floor per second; a refused retry ends the turn at once.',
  cases: [
    {
      title: 'the window holds one retry: the second is refused, and the turn fails at once',
      source: ['-a-#', '--b-#'],
      values: v,
      error: reset,
      label: `retryAsEvents({ count: 3, budget: ${onePerWindow} })`,
      operator: () => retryAsEvents({ count: 3, budget: budget() }),
      expected: /* */ '-a-r-b-#',
      expectedValues: { ...v, r: r(1, 0) },
      expectedError: retriesExhaustedError('budget', [
        { attempt: 1, reason: 'connection reset', error: reset, emitted: 1 },
        { attempt: 2, reason: 'connection reset', error: reset, emitted: 1 },
      ]),
      subscriptions: ['^--!', '---^---!'],
    },
    {
      title: 'the window slides: 10 frames after the first retry, a retry is allowed again',
      source: ['-a-#', '--b-------#', '--c-f-|'],
      values: v,
      error: reset,
      label: `retryAsEvents({ count: 3, budget: ${onePerWindow} })`,
      operator: () => retryAsEvents({ count: 3, budget: budget() }),
      expected: /* */ '-a-r-b-------s-c-f-|',
      expectedValues: { ...v, r: r(1, 0), s: r(2, 0) },
      subscriptions: ['^--!', '---^---------!', '-------------^-----!'],
    },
    {
      title:
        'a refused retry is refused before its delay: the turn does not wait for a retry it will not make',
      source: ['-a-#', '--b-#'],
      values: v,
      error: reset,
      label: `retryAsEvents({ count: 3, delay: 5, budget: ${onePerWindow} })`,
      operator: () => retryAsEvents({ count: 3, delay: 5, budget: budget() }),
      expected: /* */ '-a-r------b-#',
      expectedValues: { ...v, r: r(1, 5) },
      expectedError: retriesExhaustedError('budget', [
        { attempt: 1, reason: 'connection reset', error: reset, emitted: 1 },
        { attempt: 2, reason: 'connection reset', error: reset, emitted: 1 },
      ]),
      subscriptions: ['^--!', '--------^---!'],
    },
  ],
});
