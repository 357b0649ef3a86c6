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
