import type { Observable, OperatorFunction } from 'rxjs';
import type { AssembledEvent } from './assembleToolCalls.js';
import { backoff } from './backoff.js';
import { type CleanTurnOptions, cleanTurn } from './cleanTurn.js';
import { type RetryAsEventsOptions, retryAsEvents } from './retryAsEvents.js';
import type { ProviderEvent, TurnEvent } from './types.js';

/** Options of {@link turnPipeline}: those of {@link cleanTurn}, and how to retry. */
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
 * source:       -a-c-#               (cold; the second subscription finishes)
 *               -b-k-f-|
 *          turnPipeline({ turnId: 'turn-42', retry: 1 })
 * result:       -a---X-b-(Kf)|       X: reset to attempt 2; K: attempt 2's call, keyed
 * ```
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
 * @param options `turnId`; optionally `retry`, `early`, `seen` and `key`.
 * @returns An operator from the attempts' provider events (whole calls) to the clean turn stream.
 */
export function turnPipeline(
  options: TurnPipelineOptions,
): OperatorFunction<AssembledEvent<ProviderEvent>, TurnEvent> {
  const { retry = { count: 2, delay: backoff() }, ...clean } = options;
  return function turnPipelineOperator(source: Observable<AssembledEvent<ProviderEvent>>) {
    return source.pipe(retryAsEvents(typeof retry === 'number' ? { count: retry } : retry), cleanTurn(clean));
  };
}
