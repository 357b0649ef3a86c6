import { filter, type OperatorFunction, pipe } from 'rxjs';
import { bufferUntilFinish } from './bufferUntilFinish.js';
import { resetOnRetry } from './resetOnRetry.js';
import { tagAttempts } from './tagAttempts.js';
import type { PolicyEvent, ProviderEvent, RetryEvent } from './types.js';

/**
 * The policy teams ship first: keep appending, run each call as soon as it is complete.
 *
 * It does not know about attempts: retries are spliced in silently, so everything is attempt 1, the user reads
 * both attempts glued together, and every attempt's calls reach the tools.
 *
 * ```text
 * source:       -a-c-d-r-b-k-e-f-|
 *          naivePolicy()
 * result:       -a-c-d---b-k-e-f-|     all attempt 1: 'Checking… Refunding the damChecking…'; c and k both run
 * ```
 *
 * @see {@link policies} to put the three policies side by side.
 * @returns An operator from provider events to policy events.
 */
export function naivePolicy(): OperatorFunction<ProviderEvent, PolicyEvent> {
  return pipe(
    filter((event): event is Exclude<ProviderEvent, RetryEvent> => event.type !== 'retry'),
    tagAttempts(),
  );
}

/**
 * The policy teams ship by mistake: reset what the user reads on retry, run calls at once.
 *
 * The text is clean, but a call of an abandoned attempt already reached the tools before the reset.
 *
 * ```text
 * source:       -a-c-d-r-b-k-e-f-|
 *          resetOnlyPolicy()
 * result:       -a-c-d-R-b-k-e-f-|     clean text, and still two refunds (c and k)
 * ```
 *
 * @see {@link policies} to put the three policies side by side.
 * @returns An operator from provider events to policy events.
 */
export function resetOnlyPolicy(): OperatorFunction<ProviderEvent, PolicyEvent> {
  return pipe(tagAttempts(), resetOnRetry());
}

/**
 * Reset on retry, and release calls only when their attempt finishes.
 *
 * ```text
 * source:       -a-c-d-r-b-k-e-f-|
 *          lateExecutionPolicy()
 * result:       -a---d-R-b---e-(kf)|   clean text, and one refund (k, the call of the attempt that finished)
 * ```
 *
 * Add effect keys ({@link cleanTurn}) so that even a call that reaches the tools twice has one effect.
 *
 * @see {@link policies} to put the three policies side by side.
 * @returns An operator from provider events to policy events.
 */
export function lateExecutionPolicy(): OperatorFunction<ProviderEvent, PolicyEvent> {
  return pipe(tagAttempts(), resetOnRetry(), bufferUntilFinish());
}

/** The three policies of the help-desk comparison, in the order the problem is usually discovered. */
export const policies = {
  /** {@link naivePolicy}: keep appending, run calls at once. */
  naive: naivePolicy,
  /** {@link resetOnlyPolicy}: reset on retry, run calls at once. */
  resetOnly: resetOnlyPolicy,
  /** {@link lateExecutionPolicy}: reset on retry, run calls when their attempt finishes. */
  lateExecution: lateExecutionPolicy,
} as const;

/** The name of one of {@link policies}. */
export type PolicyName = keyof typeof policies;
