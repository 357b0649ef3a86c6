import { type Observable, type SchedulerLike, switchMap, timer } from 'rxjs';

/** The longest delay `setTimeout` holds (2^31 − 1 ms, 24.8 days); past it, timers fire at once. */
export const MAX_TIMER_DELAY = 2_147_483_647;

/**
 * `timer(ms)` for any `ms`: a wait longer than a timer holds is taken in steps, so that it lasts as long as it says
 * instead of ending at once. Emits 0 and completes.
 */
export function wait(ms: number, scheduler?: SchedulerLike): Observable<0> {
  if (!(ms > MAX_TIMER_DELAY)) return scheduler === undefined ? timer(ms) : timer(ms, scheduler);
  const step = scheduler === undefined ? timer(MAX_TIMER_DELAY) : timer(MAX_TIMER_DELAY, scheduler);
  return step.pipe(switchMap(() => wait(ms - MAX_TIMER_DELAY, scheduler)));
}

/**
 * Runs `command`, or rejects with `timeout()` once `timeoutMs` has passed, or with `signal`'s reason when it aborts;
 * the timer and the listener are always removed. The one timeout around a promise: the ledgers' and the turn log's
 * commands and queries.
 */
export async function withinTime<T>(
  timeoutMs: number,
  timeout: () => Error,
  command: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  if (signal?.aborted) throw signal.reason;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let abort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout()), timeoutMs);
    if (signal !== undefined) {
      abort = () => reject(signal.reason);
      signal.addEventListener('abort', abort, { once: true });
    }
  });
  try {
    const result = await Promise.race([command(), stopped]);
    if (signal?.aborted) throw signal.reason;
    return result;
  } finally {
    clearTimeout(timer);
    if (abort !== undefined) signal?.removeEventListener('abort', abort);
  }
}
