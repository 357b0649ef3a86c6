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
 * source:   -a-c-d-r-b-k-e-f-|
 *           naivePolicy()
 * result:   -A-C-D---B-K-E-F-|
 *
 * where
 *   a = text "Checking order ORD-7781. "
 *   c = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   d = text "Refunding the dam"
 *   r = retry "connection reset"
 *   b = text "Checking order ORD-7781. "
 *   k = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   e = text "The book arrived damaged, so I have started a full refund."
 *   f = finish stop
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   C = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   B = text "Checking order ORD-7781. ", attempt 1
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 1
 *   F = finish stop, attempt 1
 * ```
 *
 * Every case of `marbles/naivePolicy.marbles.ts`, with pictures: `docs/operators/naivePolicy.md`.
 *
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
 * source:   -a-c-d-r-b-k-e-f-|
 *           resetOnlyPolicy()
 * result:   -A-C-D-X-B-K-E-F-|
 *
 * where
 *   a = text "Checking order ORD-7781. "
 *   c = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   d = text "Refunding the dam"
 *   r = retry "connection reset"
 *   b = text "Checking order ORD-7781. "
 *   k = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   e = text "The book arrived damaged, so I have started a full refund."
 *   f = finish stop
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   C = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   X = reset to attempt 2 (connection reset)
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   F = finish stop, attempt 2
 * ```
 *
 * Every case of `marbles/resetOnlyPolicy.marbles.ts`, with pictures: `docs/operators/resetOnlyPolicy.md`.
 *
 * @returns An operator from provider events to policy events.
 */
export function resetOnlyPolicy(): OperatorFunction<ProviderEvent, PolicyEvent> {
  return pipe(tagAttempts(), resetOnRetry());
}

/**
 * Reset on retry, and release calls only when their attempt finishes.
 *
 * ```text
 * source:   -a-c-d-r-b-k-e-f----|
 *           lateExecutionPolicy()
 * result:   -A---D-X-B---E-(KF)-|
 *
 * where
 *   a = text "Checking order ORD-7781. "
 *   c = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   d = text "Refunding the dam"
 *   r = retry "connection reset"
 *   b = text "Checking order ORD-7781. "
 *   k = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   e = text "The book arrived damaged, so I have started a full refund."
 *   f = finish stop
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   X = reset to attempt 2 (connection reset)
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2
 *   F = finish stop, attempt 2
 * ```
 *
 * Every case of `marbles/lateExecutionPolicy.marbles.ts`, with pictures: `docs/operators/lateExecutionPolicy.md`.
 *
 * Add effect keys ({@link cleanTurn}) so that even a call that reaches the tools twice has one effect.
 *
 * @returns An operator from provider events to policy events.
 */
export function lateExecutionPolicy(): OperatorFunction<ProviderEvent, PolicyEvent> {
  return pipe(tagAttempts(), resetOnRetry(), bufferUntilFinish());
}
