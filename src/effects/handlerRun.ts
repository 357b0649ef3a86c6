/**
 * A tool handler's run as an observable, for {@link executeTools}: {@link runHandler} turns whatever the handler
 * returns (a value, a promise, an observable, a throw) into one {@link Settled} value, and {@link runTimed}
 * bounds it by `handlerTimeoutMs`.
 *
 * @module
 */

import { defaultIfEmpty, isObservable, map, Observable } from 'rxjs';
import type { KeyedToolCall } from '../types.js';
import { handlerTimeoutError } from './errors.js';
import type { Settled, TimedRun } from './executeRules.js';
import { isThenable } from './ledgerCalls.js';
import type { ToolContext, ToolHandler } from './types.js';

/**
 * Runs a handler within `handlerTimeoutMs` (none: as long as it takes): emits its outcome once it settles, or
 * `timedOut` at the deadline (its signal then aborted with an `EffectError` `handler-timeout`). The timer is cleared
 * when the handler settles or the subscriber unsubscribes.
 */
export function runTimed(
  handler: ToolHandler,
  call: KeyedToolCall,
  context: Omit<ToolContext, 'signal'>,
  controller: AbortController,
  handlerTimeoutMs: number | undefined,
): Observable<TimedRun> {
  const run = runHandler(handler, call.args, context, controller).pipe(map((settled) => ({ settled })));
  if (handlerTimeoutMs === undefined) return run;
  return new Observable<TimedRun>((subscriber) => {
    const deadline = setTimeout(() => {
      const error = handlerTimeoutError(call.name, call.effectKey, handlerTimeoutMs);
      // Aborted with the timeout first: unsubscribing would abort it without a reason.
      controller.abort(error);
      inner.unsubscribe();
      subscriber.next({ timedOut: error });
      subscriber.complete();
    }, handlerTimeoutMs);
    const inner = run.subscribe({
      next: (value) => {
        clearTimeout(deadline);
        subscriber.next(value);
      },
      complete: () => subscriber.complete(),
    });
    return () => {
      clearTimeout(deadline);
      inner.unsubscribe();
    };
  });
}

/**
 * Runs a handler and emits its outcome once as a {@link Settled} value. Accepts a plain value, a promise (or
 * any thenable) or an observable (its first value; none means `undefined`). The handler's `signal` is
 * `controller`'s (the caller aborts it for a lost lease or a timeout); unsubscribing before it settles aborts it.
 */
export function runHandler(
  handler: ToolHandler,
  args: unknown,
  context: Omit<ToolContext, 'signal'>,
  controller: AbortController,
): Observable<Settled> {
  return new Observable<Settled>((subscriber) => {
    // Whether the handler has settled; only an unsettled handler is aborted on unsubscribe.
    let done = false;
    const settle = (settled: Settled) => {
      if (done || subscriber.closed) return;
      done = true;
      subscriber.next(settled);
      subscriber.complete();
    };
    const abort = () => {
      if (!done) controller.abort();
    };
    let output: unknown;
    try {
      output = handler(args, { ...context, signal: controller.signal });
    } catch (error) {
      settle({ ok: false, error });
      return;
    }
    if (isObservable(output)) {
      const inner = output.pipe(defaultIfEmpty(undefined)).subscribe({
        next: (value) => settle({ ok: true, value }),
        error: (error: unknown) => settle({ ok: false, error }),
      });
      return () => {
        abort();
        inner.unsubscribe();
      };
    }
    if (isThenable(output)) {
      output.then(
        (value) => settle({ ok: true, value }),
        (error: unknown) => settle({ ok: false, error }),
      );
    } else {
      settle({ ok: true, value: output });
    }
    return abort;
  });
}
