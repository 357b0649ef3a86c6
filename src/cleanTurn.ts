import type { OperatorFunction } from 'rxjs';
import { BufferStage } from './bufferUntilFinish.js';
import { checkStep, type DedupeByEffectKeyOptions, DedupeStage } from './dedupeByEffectKey.js';
import { type Sink, stageOperator } from './internal/stage.js';
import type { WholeCalls } from './internal/types.js';
import { ResetStage } from './resetOnRetry.js';
import { TagStage } from './tagAttempts.js';
import type { Attempted, ProviderEvent, ToolCallEvent, TurnEvent } from './types.js';

/**
 * Options of {@link cleanTurn}.
 *
 * @inline
 */
export interface CleanTurnOptions extends DedupeByEffectKeyOptions {
  /** Tool calls to let through before their attempt finishes: pure reads only. See {@link bufferUntilFinish}. */
  early?: (call: Attempted<ToolCallEvent>) => boolean;
}

/**
 * The recommended policy: `tagAttempts → resetOnRetry → bufferUntilFinish → dedupeByEffectKey`.
 *
 * What a consumer receives is a clean turn: every event carries its attempt; each retry arrives as a typed
 * `reset`; state-changing tool calls arrive only when their attempt has finished, keyed by meaning; every call
 * of the final attempt arrives exactly once, a call whose key already ran as a `tool-call-repeat` (answer it
 * with the recorded result, never run it again). It reads whole calls: put {@link assembleToolCalls} before
 * it when the source streams call fragments (a source of fragments does not compile), or use
 * {@link attemptPipeline} and {@link turnPipeline}, which put every operator in its place.
 *
 * ```text
 * source:   -a-c-d-r-b-k-e-f----|
 *           cleanTurn({ turnId: 'turn-42' })
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
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2, key 4d02b5b61ea1afa1
 *   F = finish stop, attempt 2
 * ```
 *
 * Every case of `marbles/cleanTurn.marbles.ts`, with pictures: `docs/operators/cleanTurn.md`.
 *
 * ## Example
 * ```ts
 * import { accumulateTurn, cleanTurn } from 'cleanturn';
 *
 * providerEvents$
 *   .pipe(cleanTurn({ turnId: 'turn-42', early: (call) => call.name === 'lookup_order' }))
 *   .subscribe((event) => {
 *     if (event.type === 'reset') view.clear();
 *     if (event.type === 'text') view.append(event.text);
 *     if (event.type === 'tool-call') tools.run(event.name, event.args, event.effectKey);
 *     if (event.type === 'tool-call-repeat') tools.replay(event.id, event.effectKey); // the recorded result
 *   });
 * ```
 *
 * @see {@link accumulateTurn} to fold the result into the turn state.
 * @param options `turnId`, and optionally `step`, `early`, `seen` and `key`.
 * @returns An operator from provider events with whole tool calls to the clean turn stream.
 * @throws UsageError when `step` is not a non-negative integer.
 */
export function cleanTurn(
  options: CleanTurnOptions,
): OperatorFunction<WholeCalls<ProviderEvent, 'cleanTurn()'>, TurnEvent> {
  const { early, ...dedupe } = options;
  checkStep('cleanTurn', dedupe.step);
  // The four operators' stages, chained in one subscriber: the same rules as
  // `tagAttempts() → resetOnRetry() → bufferUntilFinish({ early }) → dedupeByEffectKey(dedupe)`, with one hop
  // through RxJS per event instead of four.
  const operator = stageOperator(
    (out: Sink<TurnEvent>) =>
      new TagStage(new ResetStage(new BufferStage(new DedupeStage(out as Sink<never>, dedupe), early))),
  );
  return operator as OperatorFunction<unknown, TurnEvent> as OperatorFunction<
    WholeCalls<ProviderEvent, 'cleanTurn()'>,
    TurnEvent
  >;
}
