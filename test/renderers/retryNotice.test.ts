// What a view shows while a turn is retried: the notice with the facts of the reset (the wait, the count, the
// cause), and the two presentations of the abandoned attempt (rolled back, or kept apart and marked interrupted).
import { resetOnRetry, retryAsEvents, tagAttempts, UsageError } from 'cleanturn';
import {
  initialView,
  reduceView,
  retryMessage,
  type TurnView,
  turnView,
  type ViewEvent,
  viewReducer,
} from 'cleanturn/renderers';
import { at, call, finish, helpDesk, keyed, reasoning, reset, text } from 'cleanturn/testing';
import { defer, EMPTY, from, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import type { RetryNotice, ViewOptions } from '../../src/renderers/reduceView.js';
import { standardChecks } from '../support/standardChecks.js';

const facts = { delay: 3000, retryCount: 1, maxRetries: 2, status: 503, errorName: 'HttpStatusError' };
const failed = reset(2, 'HTTP 503 Service Unavailable', { ...facts, failedAttempt: 1, outputStarted: true });

/** Every snapshot the operator emits for `events`, synchronously. */
function snapshots(events: readonly ViewEvent[], options?: Parameters<typeof turnView>[0]): TurnView[] {
  let views: TurnView[] = [];
  from(events)
    .pipe(turnView(options), toArray())
    .subscribe((all) => {
      views = all;
    });
  return views;
}

/** The view after `events`, folded with the reducer of `options`. */
function fold(events: readonly ViewEvent[], options?: ViewOptions): TurnView {
  return events.reduce(viewReducer(options), initialView);
}

describe('the retry notice', () => {
  it('carries the facts of the reset: the wait, the retry count and cap, the status and error class', () => {
    const view = fold([at(1, text('Refunding the dam')), failed]);
    expect(view.notice).toEqual({
      type: 'retrying',
      attempt: 2,
      reason: 'HTTP 503 Service Unavailable',
      delay: 3000,
      retryCount: 1,
      maxRetries: 2,
      status: 503,
      errorName: 'HttpStatusError',
      failedAttempt: 1,
    });
  });

  it('has no fact the reset did not carry', () => {
    const view = fold([at(1, text('Refunding the dam')), reset(2, 'connection reset')]);
    expect(view.notice).toStrictEqual({ type: 'retrying', attempt: 2, reason: 'connection reset' });
  });

  it('lasts from the reset until the new attempt shows text, reasoning or a call, or finishes', () => {
    const before = fold([at(1, text('Refunding the dam')), failed]);
    expect(before.notice?.type).toBe('retrying');
    const k = keyed('turn-42', 2, call('c7', 'issue_refund', helpDesk.refundArgs));
    for (const first of [at(2, text('Checking')), at(2, reasoning('Check')), k, at(2, finish())])
      expect(reduceView(before, first).notice).toBeUndefined();
    // The new attempt's usage says nothing to the user: the wait goes on.
    expect(reduceView(before, at(2, { type: 'usage', inputTokens: 1 })).notice).toBe(before.notice);
  });

  it('comes from the retry of retryAsEvents: the reset shows the wait at once, before the wait ends', () => {
    const scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    scheduler.run(({ cold, expectObservable }) => {
      const attempts = [
        cold('-a-#', { a: text('Refunding the dam') }, new Error('connection reset')),
        cold('-b-|', { b: text('Checking order ORD-7781.') }),
      ];
      let n = 0;
      const source$ = defer(() => attempts[n++] ?? EMPTY).pipe(
        retryAsEvents({ count: 2, delay: 5 }),
        tagAttempts(),
        resetOnRetry(),
      );
      const notices = source$.pipe(turnView());
      // The reset reaches the view when attempt 1 fails (frame 3); attempt 2 starts 5 frames later.
      expectObservable(notices).toBe('-a-x-----b-|', {
        a: expect.objectContaining({ text: 'Refunding the dam' }),
        x: expect.objectContaining({
          text: '',
          notice: expect.objectContaining({
            type: 'retrying',
            attempt: 2,
            delay: 5,
            retryCount: 1,
            maxRetries: 2,
          }),
        }),
        b: expect.objectContaining({ text: 'Checking order ORD-7781.', notice: undefined }),
      });
    });
  });
});

describe("onReset: 'rollback' (the default)", () => {
  it('drops the abandoned text and reasoning at the reset, and keeps nothing of them', () => {
    for (const options of [undefined, {}, { onReset: 'rollback' as const }]) {
      const view = fold(
        [at(1, reasoning('The customer wants a refund.')), at(1, text('Refunding the dam')), failed],
        options,
      );
      expect(view).toMatchObject({ attempt: 2, text: '', reasoning: '', interrupted: undefined });
    }
  });
});

describe("onReset: 'mark'", () => {
  const mark = viewReducer({ onReset: 'mark' });
  const events: ViewEvent[] = [
    at(1, reasoning('The customer wants a refund.')),
    at(1, text('Refunding the dam')),
    failed,
    at(2, { type: 'usage', inputTokens: 12 }),
    at(2, text('Checking order ORD-7781.')),
  ];

  it('keeps the abandoned text and reasoning apart, marked interrupted, never in text', () => {
    const views = snapshots(events, { onReset: 'mark' });
    const atReset = views[2] as TurnView;
    expect(atReset).toMatchObject({
      attempt: 2,
      text: '',
      reasoning: '',
      interrupted: {
        attempt: 1,
        text: 'Refunding the dam',
        reasoning: 'The customer wants a refund.',
        reason: 'HTTP 503 Service Unavailable',
      },
      notice: { type: 'retrying', delay: 3000 },
    });
  });

  it("clears the interrupted attempt when the new attempt's first text arrives", () => {
    const last = snapshots(events, { onReset: 'mark' }).at(-1) as TurnView;
    expect(last).toMatchObject({
      attempt: 2,
      text: 'Checking order ORD-7781.',
      interrupted: undefined,
      notice: undefined,
    });
  });

  it("clears it on the new attempt's first reasoning, or its finish, but not on a call", () => {
    const marked = fold(events.slice(0, 3), { onReset: 'mark' });
    expect(mark(marked, at(2, reasoning('Check'))).interrupted).toBeUndefined();
    expect(mark(marked, at(2, finish())).interrupted).toBeUndefined();
    const k = keyed('turn-42', 2, call('c7', 'issue_refund', helpDesk.refundArgs));
    expect(mark(marked, k).interrupted).toBe(marked.interrupted);
  });

  it('a second reset before the new attempt showed anything keeps what the user last read', () => {
    const twice = fold([...events.slice(0, 3), reset(3, 'connection reset', { delay: 0 })], {
      onReset: 'mark',
    });
    expect(twice.interrupted).toEqual({
      attempt: 1,
      text: 'Refunding the dam',
      reasoning: 'The customer wants a refund.',
      reason: 'HTTP 503 Service Unavailable',
    });
    expect(twice.notice).toMatchObject({ attempt: 3, delay: 0 });
  });

  it('an attempt that showed nothing leaves nothing to mark', () => {
    expect(
      fold([at(1, { type: 'usage', inputTokens: 3 }), failed], { onReset: 'mark' }).interrupted,
    ).toBeUndefined();
  });

  it('a straggler of the abandoned attempt changes nothing', () => {
    const marked = fold(events.slice(0, 3), { onReset: 'mark' });
    expect(mark(marked, at(1, text('aged book')))).toBe(marked);
  });
});

describe('bad options', () => {
  it('turnView and viewReducer refuse an unknown presentation with a UsageError naming the option', () => {
    // @ts-expect-error not a presentation
    expect(() => turnView({ onReset: 'strike' })).toThrow(UsageError);
    // @ts-expect-error not a presentation
    expect(() => turnView({ onReset: 'strike' })).toThrow(
      "turnView: onReset must be 'rollback' or 'mark', not \"strike\"",
    );
    // @ts-expect-error not an options object
    expect(() => turnView(5)).toThrow(UsageError);
    // @ts-expect-error not a presentation
    expect(() => viewReducer({ onReset: true })).toThrow(
      "viewReducer: onReset must be 'rollback' or 'mark', not true",
    );
    // @ts-expect-error not an options object
    expect(() => viewReducer(null)).toThrow('viewReducer: options must be an object, not null');
  });

  it('reduceView takes two arguments, so that Array.prototype.reduce can call it with its index', () => {
    const events: ViewEvent[] = [at(1, text('Refunding the dam')), failed, at(2, text('Refund'))];
    expect(events.reduce(reduceView, initialView)).toMatchObject({ attempt: 2, text: 'Refund' });
    expect(viewReducer()).toBe(reduceView);
  });
});

describe('retryMessage', () => {
  const notice = (changes: Partial<RetryNotice>): RetryNotice => ({
    type: 'retrying',
    attempt: 2,
    reason: 'connection reset',
    ...changes,
  });

  it('says how long the wait is, why, and which retry of how many', () => {
    expect(retryMessage(notice({ delay: 3000, status: 503, retryCount: 1, maxRetries: 2 }))).toBe(
      'retrying in 3 s (HTTP 503), retry 1 of 2',
    );
    expect(retryMessage(notice({ delay: 3000 }))).toBe('retrying in 3 s (connection reset)');
    expect(retryMessage(notice({ retryCount: 2 }))).toBe('retrying (connection reset), retry 2');
  });

  it('says "now" for no wait, and nothing of the wait when it is unknown', () => {
    expect(retryMessage(notice({ delay: 0 }))).toBe('retrying now (connection reset)');
    expect(retryMessage(notice({}))).toBe('retrying (connection reset)');
  });

  it('rounds the wait up to whole seconds, tenths below one second, minutes from two minutes', () => {
    const waits: [number, string][] = [
      [1, 'in 0.1 s'],
      [250, 'in 0.3 s'],
      [999, 'in 1 s'],
      [1000, 'in 1 s'],
      [2400, 'in 3 s'],
      [59_000, 'in 59 s'],
      [119_000, 'in 119 s'],
      [120_000, 'in 2 min'],
      [150_000, 'in 3 min'],
    ];
    for (const [delay, said] of waits)
      expect(retryMessage(notice({ delay }))).toBe(`retrying ${said} (connection reset)`);
  });

  it('counts down from a remaining time of your own, and says "now" once it has passed', () => {
    expect(retryMessage(notice({ delay: 3000 }), { remaining: 1200 })).toBe(
      'retrying in 2 s (connection reset)',
    );
    expect(retryMessage(notice({ delay: 3000 }), { remaining: -5 })).toBe('retrying now (connection reset)');
  });

  it('reads a reset as well as a notice, and ignores facts that are not numbers', () => {
    expect(retryMessage(failed)).toBe('retrying in 3 s (HTTP 503), retry 1 of 2');
    expect(retryMessage({ reason: 'x', delay: Number.NaN, status: '503' as unknown as number })).toBe(
      'retrying (x)',
    );
  });
});

standardChecks<ViewEvent>({
  name: "turnView({ onReset: 'mark' })",
  make: () => turnView({ onReset: 'mark' }),
  values: {
    a: at(1, text('Refunding the dam')),
    b: reset(2, 'connection reset', { delay: 5 }),
    c: at(2, text('Refund')),
  },
  expected: {
    a: { ...initialView, text: 'Refunding the dam' },
    b: {
      ...initialView,
      attempt: 2,
      resets: [reset(2, 'connection reset', { delay: 5 })],
      notice: { type: 'retrying', attempt: 2, reason: 'connection reset', delay: 5 },
      interrupted: { attempt: 1, text: 'Refunding the dam', reasoning: '', reason: 'connection reset' },
    },
    c: { ...initialView, attempt: 2, resets: [reset(2, 'connection reset', { delay: 5 })], text: 'Refund' },
  },
});

describe('retryMessage with a long or empty reason', () => {
  it('shortens a long reason to 80 characters on one line, and falls back to the error class', () => {
    const long = `socket hang up\n${'x'.repeat(200)}`;
    const said = retryMessage({ reason: long, delay: 0 });
    expect(said).toBe(`retrying now (socket hang up ${'x'.repeat(64)}…)`);
    expect(retryMessage({ reason: '', errorName: 'StallTimeoutError' })).toBe('retrying (StallTimeoutError)');
    expect(retryMessage({ reason: '' })).toBe('retrying');
  });
});

describe('the notice of a reset made by hand', () => {
  it('keeps only the facts that have their types: finite numbers, a string error class', () => {
    const odd = reset(2, 'x', {
      delay: Number.NaN,
      retryCount: '1' as unknown as number,
      status: 503,
      errorName: 7 as unknown as string,
    });
    expect(reduceView(initialView, odd).notice).toStrictEqual({
      type: 'retrying',
      attempt: 2,
      reason: 'x',
      status: 503,
    });
  });
});
