/**
 * Ledger calls as observables, for {@link executeTools}: an answer that may be synchronous or a promise
 * ({@link awaited}), one that can be cut off ({@link awaitedCancellable}), and the write that records an outcome,
 * sent again while it fails with a retryable error ({@link record}).
 *
 * @module
 */
import { catchError, defer, from, mergeMap, Observable, of, throwError, timer } from 'rxjs';
import { settleRetryPause } from './executeRules.js';
import type { Awaitable } from './types.js';

/**
 * Sends a write that records a call's outcome (`complete`, `fail`, `release`) until it lands. The handler has
 * run, and every write is safe to send twice under its claim token, so a write that fails with a retryable
 * error (no answer, a lock held, memory full, a connection lost) is sent again after a growing pause (100 ms,
 * doubling), at most `SETTLE_TRIES` times in all and never once the lease would have ended (`endsAt`:
 * past it, another run may take the key over). Then the last error goes on. Unsubscribing cancels the pause.
 */
export function record(write: () => Awaitable<void>, endsAt: () => number): Observable<void> {
  const send = (n: number): Observable<void> =>
    awaited(write).pipe(
      catchError((error: unknown) => {
        // The pause ends by the lease's end at the latest; renewals meanwhile may move that end on.
        const pause = settleRetryPause(error, n, endsAt() - Date.now());
        if (pause === undefined) return throwError(() => error);
        return timer(pause).pipe(
          mergeMap(() => (Date.now() < endsAt() ? send(n + 1) : throwError(() => error))),
        );
      }),
    );
  return send(1);
}

/** A ledger answer as an observable: synchronous answers stay synchronous. */
export function awaited<T>(call: () => Awaitable<T>): Observable<T> {
  return defer(() => {
    const value = call();
    return isThenable(value) ? from(value) : of(value);
  });
}

/**
 * As {@link awaited}, for a ledger call that can wait: unsubscribing before it answers aborts its `signal`, so
 * that a ledger waiting for a lock gives up and writes nothing for a turn that is gone.
 */
export function awaitedCancellable<T>(call: (signal: AbortSignal) => Awaitable<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const controller = new AbortController();
    const inner = awaited(() => call(controller.signal)).subscribe(subscriber);
    return () => {
      inner.unsubscribe();
      controller.abort();
    };
  });
}

/** Whether a value is a promise or any thenable (an answer to wait for), as opposed to a plain value. */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
