import type { ObservableInput } from 'rxjs';
import { type FailedAttempt, retriesExhaustedError } from '../errors.js';
import type { RetryBudget } from '../retryBudget.js';
import type { RetryEvent, RetryFacts } from '../types.js';
import { readProperty, readString } from './describeError.js';

/** The `delay` option of `retryAsEvents`: milliseconds, or a function that returns them or a notifier. */
export type RetryDelay = number | ((error: unknown, retryCount: number) => number | ObservableInput<unknown>);

/** What `retryAsEvents` decides its retries by: its options, read once, with their defaults. */
export interface RetryPolicy {
  /** How many retries at most; `Infinity` for no cap. */
  readonly count: number;
  /** The wait before each retry; undefined: none, resubscribe at once. */
  readonly delay: RetryDelay | undefined;
  /** Whether a value of the source starts the count (and the records) again. */
  readonly resetOnSuccess: boolean;
  /** Whether an error deserves another attempt; called as a plain function, without `this`. */
  readonly shouldRetry: (error: unknown, retryCount: number) => boolean;
  /** The `reason` of a failure, for its event and its record. */
  readonly describe: (error: unknown) => string;
  /** The retry budget shared with other turns, if any. */
  readonly budget: RetryBudget | undefined;
}

/** The result of a call that may throw: its value, or what it threw. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

/** Calls `fn` and returns what it threw instead of throwing it: a caller's callback that throws ends the result. */
export function safely<R>(fn: () => R): Outcome<R> {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * The most recent failed attempts of a subscription, oldest first, at most `limit`: the records that a
 * `retries-exhausted` `TurnError` carries.
 */
export class FailureLog {
  #records: FailedAttempt[] = [];

  /** @param limit How many records to keep at most. */
  constructor(private readonly limit: number) {}

  /** The records kept. */
  get records(): readonly FailedAttempt[] {
    return this.#records;
  }

  /** Keeps a failure's record, dropping the oldest one past the limit. */
  record(failure: FailedAttempt): void {
    this.#records.push(failure);
    if (this.#records.length > this.limit) this.#records.shift();
  }

  /** Forgets every record: a new array, so that one an error was given keeps what it holds. */
  clear(): void {
    if (this.#records.length > 0) this.#records = [];
  }
}

/**
 * Why a failure whose reason is known is not retried, as the error that ends the result (undefined: it is retried).
 * Checked in this order: `shouldRetry` throws (what it threw) or declines (the error itself), the cap is reached,
 * the budget throws or refuses. The budget comes last, so that only a retry that everything else allows is withdrawn,
 * and before the delay, so that a refused retry is not waited for.
 *
 * @param retryCount The retries made so far (this one would be `retryCount + 1`).
 * @param failures The records kept, this failure's last; `attempt` is how many attempts failed in all.
 */
export function refusalOf(
  policy: RetryPolicy,
  error: unknown,
  retryCount: number,
  failures: readonly FailedAttempt[],
  attempt: number,
): { error: unknown } | undefined {
  const { shouldRetry, count, budget } = policy;
  const wanted = safely(() => shouldRetry(error, retryCount + 1));
  if (!wanted.ok) return { error: wanted.error };
  if (!wanted.value) return { error };
  // Every attempt so far has failed: `attempt` of them, of which `failures` holds the most recent.
  if (!(retryCount < count)) return { error: retriesExhaustedError('cap', failures, attempt) };
  if (budget === undefined) return undefined;
  const allowed = safely(() => budget.tryWithdraw());
  if (!allowed.ok) return { error: allowed.error };
  return allowed.value ? undefined : { error: retriesExhaustedError('budget', failures, attempt) };
}

/** The wait before a retry, as `delay` asks for it: none, milliseconds, or a notifier and how long it says it waits. */
export type AskedWait =
  | { kind: 'none' }
  | { kind: 'ms'; ms: number }
  | { kind: 'notifier'; notifier: ObservableInput<unknown>; ms: number | undefined };

/**
 * The wait before retry number `retryCount` of `error`: none without `delay`, else what `delay` is or returns.
 * Throws what the `delay` function throws.
 */
export function askWait(delay: RetryDelay | undefined, error: unknown, retryCount: number): AskedWait {
  if (delay === undefined) return { kind: 'none' };
  const asked = typeof delay === 'number' ? delay : delay(error, retryCount);
  if (typeof asked === 'number') return { kind: 'ms', ms: asked };
  return { kind: 'notifier', notifier: asked, ms: knownDelay(asked) };
}

/** How long the `retry` event says the wait is: 0 without a wait (at once), undefined when it is not known. */
export function statedDelay(wait: AskedWait): number | undefined {
  return wait.kind === 'none' ? 0 : wait.ms;
}

/** How long a delay notifier waits, when it says so: a finite `delay` property >= 0 (as `backoff`'s timers have). */
function knownDelay(notifier: unknown): number | undefined {
  const ms = readProperty(notifier, 'delay');
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** A failed attempt that is retried: what its `retry` event says of it. */
export interface RetriedFailure {
  /** The error that ended the attempt. */
  error: unknown;
  /** The error's description, the event's `reason`. */
  reason: string;
  /** The number of the attempt that failed (1 for the first). */
  failedAttempt: number;
  /** Whether the failed attempt had emitted values. */
  outputStarted: boolean;
}

/** The `retry` event of a retried failure: its reason and error, then the facts of the retry that are known. */
export function retryEvent(
  failure: RetriedFailure,
  known: { delay: number | undefined; retryCount: number; count: number },
): RetryEvent {
  const { error, reason, failedAttempt, outputStarted } = failure;
  const { delay, retryCount, count } = known;
  return {
    type: 'retry',
    reason,
    error,
    ...retryFacts(error, { delay, failedAttempt, outputStarted, retryCount, count }),
  };
}

/** The facts of a retry for its event: only those that are known. */
function retryFacts(
  error: unknown,
  known: {
    delay: number | undefined;
    failedAttempt: number;
    outputStarted: boolean;
    retryCount: number;
    count: number;
  },
): RetryFacts {
  const facts: RetryFacts = {};
  if (known.delay !== undefined) facts.delay = known.delay;
  facts.failedAttempt = known.failedAttempt;
  facts.outputStarted = known.outputStarted;
  facts.retryCount = known.retryCount;
  if (Number.isFinite(known.count)) facts.maxRetries = known.count;
  const name = readString(error, 'name');
  if (name !== undefined && name !== '') facts.errorName = name;
  const status = readProperty(error, 'status');
  if (typeof status === 'number' && Number.isInteger(status)) facts.status = status;
  return facts;
}
