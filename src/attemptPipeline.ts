import { type OperatorFunction, pipe } from 'rxjs';
import { type AssembledEvent, AssembleStage } from './assembleToolCalls.js';
import { type Sink, stageOperator } from './internal/stage.js';
import { RequireFinishStage } from './requireFinish.js';
import type { ProviderEvent } from './types.js';

/**
 * The part of a turn that runs once per attempt: `adapter → assembleToolCalls → requireFinish`, ending at
 * the attempt's finish.
 *
 * Put it inside what {@link turnPipeline} (or {@link retryAsEvents}) resubscribes to, so that each attempt
 * is decoded, has its call fragments joined into whole calls, and fails with a retryable
 * a `missing-finish` `TurnError` when it ends without a finish: a garbled call and a cut-off stream are both retried.
 * Without an adapter it reads provider events (a client of one's own).
 *
 * The attempt completes with its `finish` and unsubscribes from its source then (closing the request): a
 * connection reset or a silent socket after the finish cannot fail or retry a finished turn. The shipped
 * adapters release the finish at the format's end, after the attempt's usage; a source of your own sends
 * `usage` before `finish` for the same reason.
 *
 * ```text
 * source:   -a-x-y-f-|
 *           attemptPipeline()
 * result:   -a---K-(f|)
 *
 * where
 *   a = text "Checking order ORD-7781. "
 *   x = tool-call-delta #0 c1 issue_refund "{\"order_id\":\"ORD-7781\","
 *   y = tool-call-delta #0 "\"amount\":\"full\"}"
 *   f = finish tool-calls
 *   K = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 * ```
 *
 * Every case of `marbles/attemptPipeline.marbles.ts`, with pictures: `docs/operators/attemptPipeline.md`.
 *
 * ## Example
 * ```ts
 * import { concatMap, defer } from 'rxjs';
 * import { attemptPipeline, turnPipeline } from 'cleanturn';
 * import { openaiChat } from 'cleanturn/providers';
 *
 * const turn$ = defer(() => client.chat.completions.create({ model: 'gpt-4.1', messages, stream: true })).pipe(
 *   concatMap((stream) => stream), // the SDK's stream of chunks: one request per attempt
 *   attemptPipeline(openaiChat()),
 *   turnPipeline({ turnId: 'turn-42', retry: { count: 2 } }),
 * );
 * ```
 *
 * @see {@link turnPipeline}, the part that runs once per turn.
 * @returns An operator from one attempt's raw events to its provider events with whole tool calls.
 */
export function attemptPipeline(): OperatorFunction<ProviderEvent, AssembledEvent<ProviderEvent>>;
/**
 * The same, for a source of a provider's payloads: its adapter first.
 *
 * @param adapter The provider adapter (`openaiChat()`, `anthropicMessages()`…).
 * @returns An operator from one attempt's payloads to its provider events with whole tool calls.
 */
export function attemptPipeline<I>(
  adapter: OperatorFunction<I, ProviderEvent>,
): OperatorFunction<I, AssembledEvent<ProviderEvent>>;
export function attemptPipeline<I>(
  adapter?: OperatorFunction<I, ProviderEvent>,
): OperatorFunction<I, AssembledEvent<ProviderEvent>> {
  // The two operators' stages, chained in one subscriber; the attempt ends at its finish.
  const whole = stageOperator(
    (out: Sink<AssembledEvent<ProviderEvent>>) =>
      new AssembleStage<ProviderEvent>(new RequireFinishStage(out, true)),
  );
  return adapter === undefined
    ? (whole as OperatorFunction<unknown, AssembledEvent<ProviderEvent>>)
    : pipe(adapter, whole);
}
