import { defer, type Observable } from 'rxjs';

/** A source whose n-th subscription subscribes to the n-th observable (the last one again after that). */
export function attemptsOf<T>(...attempts: Observable<T>[]): Observable<T> {
  let next = 0;
  return defer(() => attempts[Math.min(next++, attempts.length - 1)] as Observable<T>);
}
