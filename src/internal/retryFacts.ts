import type { RetryFacts } from '../types.js';

/** The type of each fact of a retry (`RetryFacts`), in its order. */
const FACT_TYPES = {
  delay: 'number',
  failedAttempt: 'number',
  outputStarted: 'boolean',
  retryCount: 'number',
  maxRetries: 'number',
  errorName: 'string',
  status: 'number',
} as const satisfies Record<keyof RetryFacts, 'number' | 'boolean' | 'string'>;

/** The same, as a list: read on every retry, without building the list each time. */
const FACTS = Object.entries(FACT_TYPES);

/**
 * The facts of a retry that `event` (a `retry` or a `reset`) carries with their types, numbers finite; a fact of
 * another type (an event made by hand) is left out. The one reading of the facts for every operator and renderer.
 */
export function readRetryFacts(event: object): RetryFacts {
  return copyRetryFacts(event, {});
}

/** {@link readRetryFacts}, written onto `target` (an event under construction) instead of a new object. */
export function copyRetryFacts<T extends object>(event: object, target: T): T & RetryFacts {
  for (let i = 0; i < FACTS.length; i++) {
    const [name, type] = FACTS[i] as (typeof FACTS)[number];
    const value: unknown = (event as Record<string, unknown>)[name];
    if (typeof value === type && (type !== 'number' || Number.isFinite(value)))
      (target as Record<string, unknown>)[name] = value;
  }
  return target as T & RetryFacts;
}
