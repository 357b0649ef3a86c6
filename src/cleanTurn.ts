import type { OperatorFunction } from 'rxjs';
import { BufferStage } from './bufferUntilFinish.js';
import { type DedupeByEffectKeyOptions, DedupeStage } from './dedupeByEffectKey.js';
import { type Sink, stageOperator } from './internal/stage.js';
import type { WholeCalls } from './internal/types.js';
import { ResetStage } from './resetOnRetry.js';
import { TagStage } from './tagAttempts.js';
import type { Attempted, ProviderEvent, ToolCallEvent, TurnEvent } from './types.js';

/** Options of {@link cleanTurn}. */
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
 * source:       -a-c-d-r-b-k-e-f-|       c, k: the same refund (ids c1, c7); r: retry
 *          cleanTurn({ turnId: 'turn-42' })
 * result:       -a---d-R-b---e-(Kf)|     K = k with attempt 2 and its effect key
 * ```
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
 * @param options `turnId`, and optionally `early`, `seen` and `key`.
 * @returns An operator from provider events with whole tool calls to the clean turn stream.
 */
export function cleanTurn(
  options: CleanTurnOptions,
): OperatorFunction<WholeCalls<ProviderEvent, 'cleanTurn()'>, TurnEvent> {
  const { early, ...dedupe } = options;
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
