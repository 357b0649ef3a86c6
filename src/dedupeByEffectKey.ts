import type { OperatorFunction } from 'rxjs';
import { effectKey } from './effectKey.js';
import { UsageError } from './errors.js';
import { describeValue } from './internal/describeValue.js';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { NotInferred } from './internal/types.js';
import type { ToolCallEvent } from './types.js';

/**
 * Anything that can tell whether an effect key was already executed: a `Set<string>` or an effect ledger.
 *
 * @inline
 */
export interface EffectKeyLookup {
  /** Whether the effect of `key` was already executed (or is claimed by a run). */
  has(key: string): boolean;
}

/**
 * Options of {@link dedupeByEffectKey}.
 *
 * @inline
 */
export interface DedupeByEffectKeyOptions {
  /** The orchestrator's id for the turn, stable across retries and restarts. */
  turnId: string;
  /**
   * Keys whose effects already ran (in an earlier run of this turn, another process, a ledger). Calls with
   * these keys are delivered as repeats (`tool-call-repeat`). It is only read, never written: recording an effect as done is
   * the job of whoever executes it.
   */
  seen?: EffectKeyLookup;
  /**
   * The step of a run of turns that this turn is (turn, tools, next request, next turn: 1 for the first), as the
   * orchestrator counts them, never the model. It enters every key, `effectKey(turnId, call, step)`: the same
   * refund retried inside step 1 is one effect, the same refund asked for again in step 3 is a second one, and
   * their keys say so. A non-negative integer; default none, the keys of `[turnId, name, args]`.
   */
  step?: number;
  /** The key function, given the turn id, the call and the `step`; defaults to {@link effectKey}. */
  key?: (turnId: string, call: ToolCallEvent, step?: number) => string;
}

/**
 * The events {@link dedupeByEffectKey} emits for an input of `E`: tool calls gain `effectKey`, and a call whose
 * key already ran becomes a `tool-call-repeat`.
 *
 * @inline
 */
export type WithEffectKeys<E> = E extends { type: 'tool-call' }
  ? (E & { effectKey: string }) | (Omit<E, 'type'> & { type: 'tool-call-repeat'; effectKey: string })
  : E;

/**
 * Stamps `effectKey` on each `tool-call`, and turns a call whose key was already released in this subscription
 * or is in `seen` into a repeat: a `tool-call-repeat` event (`RepeatedToolCall`) with the same fields.
 *
 * Keys come from meaning (turn id, tool name, canonical arguments), not from provider call ids, so the same
 * refund proposed by two attempts (`c1`, then `c7`) has one key, and only one of them is a `tool-call`: code
 * that runs `tool-call`s runs the refund once. A repeat is never dropped: the provider expects an answer for
 * every call id of the final attempt, so the repeat still reaches the consumer, who answers it with the
 * recorded result of its key and never runs its effect again (`executeTools` of `cleanturn/effects` does so). Repeats happen when a pure read ran early in an abandoned attempt and the
 * final attempt asks again, when a ledger already holds the key, and when one attempt makes the same call
 * twice.
 *
 * ```text
 * source:   -A-C-D-R-B-K-E-F-|
 *           dedupeByEffectKey({ turnId: 'turn-42' })
 * result:   -A-Q-D-R-B-P-E-F-|
 *
 * where
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   C = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   R = retry "connection reset", attempt 2
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   F = finish stop, attempt 2
 *   Q = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 1, key 4d02b5b61ea1afa1
 *   P = {"type":"tool-call-repeat","id":"c7","name":"issue_refund","args":{"order_id":"ORD-7781","amount":"full"},"attempt":2,"effectKey":"4d02b5b61ea1afa1"}
 * ```
 *
 * Every case of `marbles/dedupeByEffectKey.marbles.ts`, with pictures: `docs/operators/dedupeByEffectKey.md`.
 *
 * A call whose arguments cannot be keyed ({@link effectKey}: not JSON data, an integer beyond
 * `Number.MAX_SAFE_INTEGER`, nesting deeper than 256 levels) must not run, and no key is made up for it: the stream
 * errors with an `effect-key` `TurnError` in its place, so that neither it nor any later event is released. Calls released
 * before it stay released.
 *
 * State: the keys released in this subscription.
 *
 * ## Example
 * ```ts
 * import { dedupeByEffectKey, tagAttempts } from 'cleanturn';
 * import { MemoryEffectLedger } from 'cleanturn/effects';
 *
 * const ledger = new MemoryEffectLedger();
 * providerEvents$
 *   .pipe(tagAttempts(), dedupeByEffectKey({ turnId: 'turn-42', seen: ledger.seen('turn-42') }))
 *   .subscribe((e) => {
 *     if (e.type === 'tool-call') answer(e.id, runTool(e.name, e.args, e.effectKey));
 *     if (e.type === 'tool-call-repeat') answer(e.id, recordedResult(e.effectKey)); // already done: never run again
 *   });
 * ```
 *
 * @see {@link effectKey} for the key and how to compute it in another language.
 * @param options `turnId`; optional `step`, `seen` keys and `key` function.
 * @returns An operator that keys tool calls and marks the repeats of a key.
 * @throws UsageError when `step` is not a non-negative integer.
 */
export function dedupeByEffectKey<E extends { type: string }>(
  options: DedupeByEffectKeyOptions,
  // `E` comes from the source only: inferred from what a declared result type asks for (a policy declared as
  // `OperatorFunction<ProviderEvent, TurnEvent>`), it would not match what the operator before it emits.
): OperatorFunction<E, WithEffectKeys<NotInferred<E>>> {
  checkStep('dedupeByEffectKey', options.step);
  return stageOperator((out: Sink<WithEffectKeys<E>>) => new DedupeStage<E>(out, options));
}

/** The stage of {@link dedupeByEffectKey}. */
export class DedupeStage<E extends { type: string }> extends Stage<E, WithEffectKeys<E>> {
  private readonly turnId: string;
  private readonly seen: EffectKeyLookup | undefined;
  private readonly step: number | undefined;
  private readonly key: (turnId: string, call: ToolCallEvent, step?: number) => string;
  /** Keys released by this subscription (created with the first call: most turns have none or few). */
  private released: Set<string> | undefined;

  constructor(out: Sink<WithEffectKeys<E>>, options: DedupeByEffectKeyOptions) {
    super(out);
    this.turnId = options.turnId;
    this.seen = options.seen;
    this.step = options.step;
    this.key = options.key ?? effectKey;
  }

  next(event: E): void {
    if (event.type !== 'tool-call') {
      this.out.next(event as WithEffectKeys<E>);
      return;
    }
    // The key function and the lookup are the user's: what they throw becomes an error notification. So does the
    // The effect-key TurnError of a call that cannot be keyed: it must not run, and no key may be made up for it.
    const k = this.key(this.turnId, event as unknown as ToolCallEvent, this.step);
    const repeat = this.released?.has(k) === true || this.seen?.has(k) === true;
    if (this.released === undefined) this.released = new Set();
    this.released.add(k);
    // A copy with the key (Object.assign: a spread followed by a new key is slow in V8, see tagAttempts).
    const keyed = Object.assign({}, event, { effectKey: k });
    if (repeat) (keyed as { type: string }).type = 'tool-call-repeat';
    this.out.next(keyed as WithEffectKeys<E>);
  }

  protected override clear(): void {
    this.released = undefined;
  }
}

/**
 * Refuses a `step` that is not a non-negative safe integer, for the operators that key calls.
 * @internal
 */
export function checkStep(operator: string, step: unknown): void {
  if (step !== undefined && !(Number.isSafeInteger(step) && (step as number) >= 0))
    throw new UsageError(operator, 'step', `must be an integer >= 0, not ${describeValue(step)}`);
}
