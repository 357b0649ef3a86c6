import { of, Subject, throwError, timer } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Resubscriber } from '../src/internal/resubscriber.js';

/** A target that records how it ended, and closes then (or when `unsubscribe` is called), as a subscriber does. */
function target() {
  const ended: string[] = [];
  const subscriber = {
    closed: false,
    error(error: unknown) {
      ended.push(`error ${String(error)}`);
      subscriber.closed = true;
    },
    complete() {
      ended.push('complete');
      subscriber.closed = true;
    },
    unsubscribe() {
      subscriber.closed = true;
    },
  };
  return { subscriber, ended };
}

describe('Resubscriber: the one resubscribe driver of retry, resume and reconnect', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a step asked for again from inside a run after that run returns, without growing the stack', () => {
    const { subscriber } = target();
    let runs = 0;
    let depth = 0;
    let deepest = 0;
    const driver: Resubscriber = new Resubscriber(() => {
      depth++;
      deepest = Math.max(deepest, depth);
      runs++;
      if (runs < 100_000) driver.again();
      depth--;
    }, subscriber);
    driver.run();
    expect(runs).toBe(100_000);
    expect(deepest).toBe(1);
  });

  it('runs `first` in place of the step for the first run only', () => {
    const { subscriber } = target();
    const ran: string[] = [];
    const driver: Resubscriber = new Resubscriber(() => {
      ran.push('step');
    }, subscriber);
    driver.run(() => {
      ran.push('first');
      driver.again();
    });
    expect(ran).toEqual(['first', 'step']);
  });

  it('starts the next run on the first value of the wait, once, and never after the target closed', () => {
    const { subscriber } = target();
    const step = vi.fn();
    const driver = new Resubscriber(step, subscriber);
    driver.again(timer(100));
    vi.advanceTimersByTime(99);
    expect(step).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(step).toHaveBeenCalledTimes(1);

    const notifier = new Subject<void>();
    driver.again(notifier);
    notifier.next();
    notifier.next();
    expect(step).toHaveBeenCalledTimes(2);

    driver.again(timer(100));
    subscriber.unsubscribe();
    vi.advanceTimersByTime(100);
    expect(step).toHaveBeenCalledTimes(3);
    driver.again();
    expect(step).toHaveBeenCalledTimes(3);
  });

  it('close ends a pending wait: no run follows, and no timer is left', () => {
    const { subscriber } = target();
    const step = vi.fn();
    const driver = new Resubscriber(step, subscriber);
    driver.again(timer(100));
    expect(vi.getTimerCount()).toBe(1);
    driver.close();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(step).not.toHaveBeenCalled();
  });

  it('errors the target with a wait that errors, and completes it with one that completes without a value', () => {
    const failing = target();
    new Resubscriber(() => undefined, failing.subscriber).again(throwError(() => 'no more'));
    expect(failing.ended).toEqual(['error no more']);

    const empty = target();
    const step = vi.fn();
    const done = new Subject<void>();
    new Resubscriber(step, empty.subscriber).again(done);
    done.complete();
    expect(empty.ended).toEqual(['complete']);
    expect(step).not.toHaveBeenCalled();
  });

  it('keeps the wait that a synchronously fired wait started, so that close still ends it', () => {
    for (const closeIt of [false, true]) {
      const { subscriber } = target();
      let runs = 0;
      const driver: Resubscriber = new Resubscriber(() => {
        runs++;
        if (runs === 1) driver.again(timer(50));
      }, subscriber);
      // `of(0)` fires as it is subscribed: the run it starts asks for a wait of its own.
      driver.again(of(0));
      expect(runs).toBe(1);
      if (closeIt) driver.close();
      vi.advanceTimersByTime(50);
      expect(runs).toBe(closeIt ? 1 : 2);
      expect(vi.getTimerCount()).toBe(0);
    }
  });
});
