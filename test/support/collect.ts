// Subscribing to a synchronous observable in a test and keeping everything it said.
import type { Observable } from 'rxjs';

/** What a synchronous observable emitted, and how it ended. */
export interface Collected<T> {
  values: T[];
  /** What it errored with; `undefined` if it did not error. */
  error: unknown;
  completed: boolean;
}

/** Everything a synchronous observable emits, and how it ended (at the return, a synchronous source has ended). */
export function collect<T>(source: Observable<T>): Collected<T> {
  const result: Collected<T> = { values: [], error: undefined, completed: false };
  source.subscribe({
    next: (value) => result.values.push(value),
    error: (error: unknown) => {
      result.error = error;
    },
    complete: () => {
      result.completed = true;
    },
  });
  return result;
}
