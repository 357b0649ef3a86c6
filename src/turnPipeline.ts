import type { Observable, OperatorFunction } from 'rxjs';
import type { AssembledEvent } from './assembleToolCalls.js';
import { backoff } from './backoff.js';
import { type CleanTurnOptions, cleanTurn } from './cleanTurn.js';
import { type RetryAsEventsOptions, retryAsEvents } from './retryAsEvents.js';
import type { ProviderEvent, TurnEvent } from './types.js';

/**
 * Options of {@link turnPipeline}: those of {@link cleanTurn}, and how to retry.
 *
 * @inline
 */
export interface TurnPipelineOptions extends CleanTurnOptions {
  /**
   * How to retry a failed attempt: {@link retryAsEvents}' options, or how many retries. Default: 2 retries (3
   * attempts) after {@link backoff}'s default delays.
   */
  retry?: RetryAsEventsOptions | number;
}

/**
 * The part of a turn that runs once per turn: `retryAsEvents → cleanTurn`.
 *
 * Put it after the per-attempt part ({@link attemptPipeline}): each failed attempt becomes a `retry` event and
 * a resubscription, and the whole turn comes out clean (see {@link cleanTurn}).
 *
 * ```text
 * source 1: -a-c-d-#
 * source 2: -b-k-e-f----|
 *           turnPipeline({ turnId: 'turn-42', retry: 1 })
 * result:   -A---D-XB---E-(KF)-|
 *
 * where
 *   a = text "Checking order ORD-7781. "
 *   c = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   d = text "Refunding the dam"
 *   # = error: Error (connection reset)
 *   b = text "Checking order ORD-7781. "
 *   k = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   e = text "The book arrived damaged, so I have started a full refund."
 *   f = finish stop
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   X = reset to attempt 2 (connection reset), in 0 ms (retry 1 of 1)
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2, key 4d02b5b61ea1afa1
 *   F = finish stop, attempt 2
 * ```
 *
 * Every case of `marbles/turnPipeline.marbles.ts`, with pictures: `docs/operators/turnPipeline.md`.
 *
 * ## Example
 * ```ts
 * import { defer } from 'rxjs';
 * import { attemptPipeline, backoff, turnPipeline } from 'cleanturn';
 * import { anthropicMessages } from 'cleanturn/providers';
 *
 * const turn$ = defer(() => client.messages.stream(request)).pipe(
 *   attemptPipeline(anthropicMessages()),
 *   turnPipeline({ turnId: 'turn-42', retry: { count: 3, delay: backoff({ initialDelay: 250 }) } }),
 * );
 * ```
 *
 * @see {@link attemptPipeline}, the part that runs once per attempt.
 * @param options `turnId`; optionally `step`, `retry`, `early`, `seen` and `key`.
 * @returns An operator from the attempts' provider events (whole calls) to the clean turn stream.
 * @throws UsageError when `step` is not a non-negative integer.
 */
export function turnPipeline(
  options: TurnPipelineOptions,
): OperatorFunction<AssembledEvent<ProviderEvent>, TurnEvent> {
  const { retry = { count: 2, delay: backoff() }, ...clean } = options;
  // Made here, so that its options (a `step` of the wrong kind) are refused by turnPipeline itself.
  const policy = cleanTurn(clean);
  return function turnPipelineOperator(source: Observable<AssembledEvent<ProviderEvent>>) {
    return source.pipe(retryAsEvents(typeof retry === 'number' ? { count: retry } : retry), policy);
  };
}
